// The permission flags (and V8 flags) of `deno task compile`, i.e. exactly the rights and memory
// settings of the operator's image: every way of running the operator from source here (the demo,
// `deno task dev`, the e2e tests, the benchmarks) uses them.

/** The `--allow-*`/`--deny-*` and `--v8-flags=` arguments of the compile task of `denoJson`. */
export function compilePermissions(denoJson: string): string[] {
  const task: string = JSON.parse(denoJson).tasks?.compile ?? "";
  const flags = task.split(/\s+/).filter((a) => /^--(allow|deny)-|^--v8-flags=/.test(a));
  if (!flags.some((f) => /^--(allow|deny)-/.test(f))) {
    throw new Error("deno.json: the compile task has no permission flags");
  }
  return flags;
}
