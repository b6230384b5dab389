/**
 * The lead broker's script of a one-pod MiniCluster run in a sandbox against stub commands (unit
 * tests of the generated scripts' behaviour).
 */
import type { MiniClusterContainer, MiniClusterSpec } from "../../api/mod.ts";
import { buildEntrypointConfigMap } from "../../controllers/minicluster/children/entrypoint.ts";
import {
  relocateCurveCert,
  relocateCustomScript,
  relocateResourceSet,
  run,
  scriptProblems,
} from "../generated/script_checks.ts";
import { miniCluster } from "./entrypoint_cases.ts";
import { specSizing } from "../../controllers/minicluster/children/sizing.ts";

const image = "rockylinux:9";

/** The lead broker's script of a one-pod MiniCluster, run in `root` with stubs; its outcome. */
export async function runLead(
  root: string,
  container: MiniClusterContainer,
  flux: Omit<NonNullable<MiniClusterSpec["flux"]>, "container"> = {},
  opts: {
    noCert?: boolean;
    fluxExitCode?: number;
    strict?: boolean;
    gpus?: number;
    /** The cores hwloc would find in the container's cpuset; more than any test grants. */
    hwlocCores?: number;
  } = {},
) {
  const mountPath = `${root}/mnt`;
  const mc = miniCluster(
    {
      size: 1,
      containers: [{ image, runFlux: true, ...container }],
      flux: { ...flux, container: { mountPath } },
      logging: { quiet: false, ...(opts.strict ? { strict: true } : {}) },
    },
    "mc",
    "ns",
  );
  const data = buildEntrypointConfigMap(mc, specSizing(mc)).data ?? {};
  const script = data["wait-0"];
  const problems = await scriptProblems("wait-0", script, "error");
  const bin = `${root}/bin`;
  await Deno.mkdir(bin, { recursive: true });
  const log = `${root}/calls`;
  // Only this run's calls: a run again in the same root stands for a restarted container.
  await Deno.writeTextFile(log, "");
  // Each call: its arguments NUL-separated, then a newline.
  await Deno.writeTextFile(
    `${bin}/flux`,
    // Under a lock: the two ends of a pipeline record at once, and their writes must not interleave.
    `#!/bin/bash\nexec 9>> "$STUB_LOG"\nflock 9\n{ printf '%s\\0' flux "$@"; printf '\\n'; } >&9\n` +
      `exec 9>&-\n` +
      // `flux R decode --count=gpu|core` reads its R (as Flux does: a writer gets no SIGPIPE) and
      // answers what hwloc would see; other `flux R` calls print an R.
      `if [ "$1" = R ] && [ "$3" = --count=gpu ]; then cat > /dev/null; echo ${opts.gpus ?? 0}; ` +
      `elif [ "$1" = R ] && [ "$3" = --count=core ]; then cat > /dev/null; ` +
      `echo ${opts.hwlocCores ?? 64}; ` +
      `elif [ "$1" = R ]; then echo '{}'; fi\n` +
      `if [ "$1" = start ]; then exit ${opts.fluxExitCode ?? 0}; fi\n`,
    { mode: 0o755 },
  );
  await Deno.writeTextFile(`${bin}/hostname`, `#!/bin/bash\necho mc-0\n`, { mode: 0o755 });
  for (const name of ["chown", "sleep"]) {
    await Deno.writeTextFile(`${bin}/${name}`, "#!/bin/bash\n", { mode: 0o755 });
  }
  await Deno.mkdir(`${mountPath}/config/etc/flux/system`, { recursive: true });
  await Deno.writeTextFile(`${mountPath}/flux-operator-done.txt`, "");
  // What the flux-view init container leaves, so that a run under logging.strict gets to Flux.
  for (const dir of ["view", "software"]) {
    await Deno.mkdir(`${mountPath}/${dir}`, { recursive: true });
  }
  await Deno.writeTextFile(`${mountPath}/config/etc/flux/system/hostlist`, "mc-0");
  // The mounted certificate; a missing one stands for one this uid cannot read.
  if (!opts.noCert) await Deno.writeTextFile(`${root}/curve.cert`, "", { mode: 0o400 });
  const relocated = relocateResourceSet(
    relocateCustomScript(
      relocateCurveCert(script, `${root}/curve.cert`),
      `${root}/custom-entrypoint.sh`,
    ),
    `${root}/R`,
  );
  const result = await run("bash", ["-c", relocated], {
    env: { PATH: `${bin}:/usr/bin:/bin`, HOME: root, STUB_LOG: log },
    cwd: root,
  });
  const calls = (await Deno.readTextFile(log).catch(() => "")).split("\0\n")
    .filter((c) => c !== "").map((c) => c.split("\0"));
  const fluxStart = calls.find((c) => c[1] === "start");
  const batch = await Deno.readTextFile(`${root}/flux-job.batch`).catch(() => undefined);
  return { problems, result, fluxStart, batch, script, calls };
}

/** Runs `fn` in a fresh temporary directory, removed afterwards. */
export async function inSandbox(fn: (root: string) => Promise<void>) {
  const root = await Deno.makeTempDir({ prefix: "mc-lead-" });
  try {
    await fn(root);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}
