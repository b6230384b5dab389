/**
 * The generated-input machinery on its own: the arbitraries give specs the builders can build,
 * the builders' children satisfy the consistency oracle for every generated spec (and after every
 * generated change), and the oracle notices when a field goes missing or lands in the wrong place.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { validateSpec, withDefaults } from "../../api/mod.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { desiredChildren } from "../../controllers/minicluster/kinds/desired.ts";
import {
  type Change,
  scriptedSequences,
  sequenceArbitrary,
  type Spec,
  specArbitrary,
} from "../generated/arbitraries.ts";
import { consistencyProblems, maximumOf, type Observed } from "../generated/oracle.ts";

const NAME = "g-unit";
const UID = "0b3e1c9a-0000-4000-8000-000000000001";

/** What the operator would create for `spec`, bootstrapped from `initial`. */
async function built(spec: Spec, initial: Spec): Promise<Observed> {
  const mc: MiniCluster = {
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name: NAME, namespace: "ns", uid: UID },
    spec,
  };
  assert.deepEqual(validateSpec(mc), []);
  const maxSize = maximumOf(initial);
  const size = Math.min(spec.size ?? 1, maxSize);
  // The Job's template stays as it was created; what its brokers depend on keeps its subdomain.
  const first = await desiredChildren(withDefaults({ ...mc, spec: initial }), {
    effectiveSize: size,
    maximumSize: maxSize,
  });
  const subdomain = first.job.spec!.template.spec!.subdomain;
  const d = await desiredChildren(withDefaults(mc), { effectiveSize: size, maximumSize: maxSize }, {
    runningSubdomain: subdomain,
  });
  const job = { ...d.job, spec: { ...d.job.spec!, template: first.job.spec!.template } };
  return {
    name: NAME,
    uid: UID,
    jobs: [job],
    services: d.services,
    configMaps: [d.configMap],
    pods: d.servicesPod ? [d.servicesPod] : [],
  };
}

/** Applies each of `changes` to `spec` in turn; the children built after each satisfy the oracle. */
async function assertChangesConsistent(spec: Spec, changes: readonly Change[]): Promise<void> {
  let current = spec;
  for (const change of changes) {
    current = change.apply(current);
    assert.deepEqual(
      consistencyProblems(current, spec, await built(current, spec)),
      [],
      change.what,
    );
  }
}

Deno.test("the builders' children satisfy the oracle for generated specs and changes", async () => {
  await fc.assert(
    fc.asyncProperty(sequenceArbitrary, async ({ spec, changes }) => {
      assert.deepEqual(consistencyProblems(spec, spec, await built(spec, spec)), []);
      await assertChangesConsistent(spec, changes);
    }),
    { seed: 20261121, numRuns: 150 },
  );
  for (const { spec, changes } of scriptedSequences()) {
    await assertChangesConsistent(spec, changes);
  }
});

Deno.test("the oracle notices a missing or misplaced field", async () => {
  const [spec] = fc.sample(
    specArbitrary.filter((s) => Object.keys(s.containers[0].environment ?? {}).length > 0),
    { seed: 7, numRuns: 1 },
  );
  const ok = await built(spec, spec);
  assert.deepEqual(consistencyProblems(spec, spec, ok), []);

  const broken = structuredClone(ok);
  broken.jobs[0].spec!.parallelism = 99;
  assert.match(consistencyProblems(spec, spec, broken).join("\n"), /parallelism 99/);

  const noEnv = structuredClone(ok);
  for (const c of noEnv.jobs[0].spec!.template.spec!.containers) c.env = [];
  assert.match(consistencyProblems(spec, spec, noEnv).join("\n"), /env /);

  const subdomain = structuredClone(ok);
  subdomain.jobs[0].spec!.template.spec!.subdomain = "elsewhere";
  assert.match(consistencyProblems(spec, spec, subdomain).join("\n"), /subdomain elsewhere/);

  const extra = structuredClone(ok);
  extra.services.push({
    ...extra.services[0],
    metadata: { ...extra.services[0].metadata, name: "stray" },
  });
  assert.match(consistencyProblems(spec, spec, extra).join("\n"), /Service stray is not asked for/);

  const noScripts = structuredClone(ok);
  noScripts.configMaps = [];
  assert.match(consistencyProblems(spec, spec, noScripts).join("\n"), /no ConfigMap/);

  // A template change must be reported through the status.
  const changed: Spec = { ...spec, network: { headlessName: "h-other" } };
  const status = {
    observedGeneration: 2,
    size: spec.size ?? 1,
    maximumSize: maximumOf(spec),
    selector: "",
    readyPods: 0,
    jobid: "",
    conditions: [
      {
        type: "SpecInvalid",
        status: "False",
        reason: "SpecValid",
        message: "",
        lastTransitionTime: "",
      },
      {
        type: "Unappliable",
        status: "False",
        reason: "Applied",
        message: "",
        lastTransitionTime: "",
      },
      { type: "SizeClamped", status: "False", reason: "", message: "", lastTransitionTime: "" },
    ],
  };
  const quiet = { ...(await built(changed, spec)), generation: 2, status } as Observed;
  assert.match(
    consistencyProblems(changed, spec, quiet).join("\n"),
    /want Unappliable=True\/JobFieldsImmutable/,
  );
});
