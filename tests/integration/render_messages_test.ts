// `minicluster-operator render` on bad input says what the API server and the operator say: each
// document the API server refuses (wrong types, schema bounds, the CRD's CEL rules) gets exactly
// the API server's causes (`spec.size: Invalid value: -3: ...`), each one it accepts but the
// operator refuses gets the SpecInvalid condition's message, the valid documents among them are
// still rendered, and the exit code is 1. The bad documents are the CRD fixtures
// (tests/fixtures/manifests/invalid/) and the bad-input corpus (rejected/ and the SpecInvalid
// cases of reported/; rejected/size-words.yaml and containers-number.yaml once crashed render).
// render words its messages as kube-apiserver 1.37 does: run against an older apiserver
// (K8S_VERSION), the test shows where they differ (how a null, a rule's failure, a duplicate and
// the type of an int32 field are printed).

import assert from "node:assert/strict";
import { join } from "node:path";
import { parseAllDocuments, stringify } from "yaml";
import { MiniClusters } from "../../api/resource.ts";
import { ApiError } from "../../runtime/client/errors.ts";
import { resourcePath } from "../../runtime/client/resources.ts";
import { loadCorpus } from "../generated/bad_input_corpus.ts";
import { integrationTest } from "../harness.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

// deno-lint-ignore no-explicit-any -- manifests are plain parsed YAML
type Obj = any;

const minimal = (name: string, spec: Obj): Obj => ({
  apiVersion: "flux-framework.org/v1alpha2",
  kind: "MiniCluster",
  metadata: { name },
  spec: { containers: [{ image: "ubuntu:noble", command: "hostname" }], ...spec },
});

/** Several problems of each kind at once, besides the corpus' one problem per document. */
const SEVERAL: Obj[] = [
  minimal("several-types", { size: "four", tasks: "x", interactive: 3 }),
  minimal("several-bounds", { size: -3, maxSize: 2, flux: { logLevel: 9 } }),
  minimal("claims-twice", {
    containers: [{
      image: "ubuntu:noble",
      resources: { claims: [{ name: "gpu" }, { name: "gpu" }, { name: "gpu" }, {}, {}] },
    }],
  }),
];

/** Rejected cases whose refusal is not a validation: the request's size, before any check. */
const NOT_VALIDATION = new Set(["rejected/huge-object.yaml"]);

/**
 * The API server's answer to `kubectl apply` of `mc` (a dry run with strict field validation): the
 * causes of its Invalid status, or the reason a request is refused before validation; [] when it
 * accepts it.
 */
async function apiServerCauses(env: { client: Obj; namespace: string }, mc: Obj) {
  try {
    await env.client.request(
      "POST",
      resourcePath(MiniClusters, { namespace: env.namespace }),
      { ...mc, metadata: { ...mc.metadata, namespace: env.namespace } },
      {
        query: { dryRun: "All", fieldValidation: "Strict" },
        verb: "create",
        resource: "miniclusters",
      },
    );
    return [];
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    if (e.reason === "BadRequest") {
      return [e.status.message!.replace(/^.* cannot be handled as a MiniCluster: /, "")];
    }
    assert.equal(e.reason, "Invalid", `${mc.metadata?.name}: ${e.message}`);
    return (e.status.details?.causes ?? []).map((c) => `${c.field}: ${c.message}`);
  }
}

async function render(stream: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", join(ROOT, "mod.ts"), "render", "-f", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(stream));
  await writer.close();
  const out = await child.output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

integrationTest(
  "render on bad input prints the API server's and the operator's messages",
  async (env) => {
    const fixturesDir = join(ROOT, "tests", "fixtures", "manifests", "invalid");
    const docs: { what: string; mc: Obj; specInvalid?: string[] }[] = [];
    for (const mc of SEVERAL) docs.push({ what: `inline ${mc.metadata.name}`, mc });
    for await (const e of Deno.readDir(fixturesDir)) {
      const text = await Deno.readTextFile(join(fixturesDir, e.name));
      for (const d of parseAllDocuments(text)) docs.push({ what: e.name, mc: d.toJS() });
    }
    for (const c of await loadCorpus()) {
      if (c.outcome === "rejected" && !NOT_VALIDATION.has(c.file)) {
        docs.push({ what: c.file, mc: c.miniCluster });
      }
      // A case whose verdict needs objects of the namespace (a referenced Secret) is judged by
      // the operator only: render reads no cluster.
      if (c.outcome === "invalid" && c.setup.length === 0) {
        docs.push({
          what: c.file,
          mc: c.miniCluster,
          specInvalid: c.expect,
        });
      }
    }
    const valid = minimal("render-still-renders-this", { size: 2 });
    const stream = [...docs.map((d) => d.mc), valid].map((d) => stringify(d)).join("---\n");
    const { code, stdout, stderr } = await render(stream);

    assert.equal(code, 1, stderr);
    const rendered = parseAllDocuments(stdout).map((d) => d.toJS());
    const job = rendered.find((o) => o?.kind === "Job");
    assert.equal(job?.metadata.name, "render-still-renders-this", "the valid document is rendered");
    assert.equal(job.spec.completions, 2);
    assert.equal(rendered.filter((o) => o?.kind === "Job").length, 1, "only the valid one");

    // Render's lines: `minicluster-operator render: MiniCluster/<name> (document <n>): <message>`.
    const said = new Map<number, string[]>();
    for (const line of stderr.trimEnd().split("\n")) {
      const m = /^minicluster-operator render: MiniCluster\/.* \(document (\d+)\): (.*)$/.exec(
        line,
      );
      assert.ok(m, `unexpected line: ${line}`);
      said.set(Number(m[1]), [...said.get(Number(m[1])) ?? [], m[2]]);
    }
    const failures: string[] = [];
    for (const [i, d] of docs.entries()) {
      const got = said.get(i + 1) ?? [];
      const causes = await apiServerCauses(env, d.mc);
      if (d.specInvalid) {
        // Accepted by the API server; the operator's SpecInvalid message names every problem.
        assert.deepEqual(causes, [], `${d.what}: the API server accepts it`);
        assert.equal(got.length, 1, `${d.what}: one message, got ${JSON.stringify(got)}`);
        for (const want of d.specInvalid) {
          if (!got[0].includes(want)) failures.push(`${d.what}: "${want}" not in ${got[0]}`);
        }
        continue;
      }
      assert.notDeepEqual(causes, [], `${d.what}: the API server accepts it`);
      const [a, b] = [[...causes].sort(), [...got].sort()];
      if (JSON.stringify(a) !== JSON.stringify(b)) {
        failures.push(
          `${d.what}:\n  apiserver: ${a.join("\n             ")}\n  render:    ${
            b.join("\n             ")
          }`,
        );
      }
    }
    assert.deepEqual(failures, [], `${failures.length} of ${docs.length} differ`);
  },
  { timeoutMs: 240_000 },
);
