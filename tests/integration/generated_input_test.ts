/**
 * Generated input, in the manner of Acto: random valid MiniClusters from the CRD schema and random
 * sequences of changes (size, command, environment, volumes, services, logging, headless name,
 * tasks, labels, deadline, minimal Service, sidecar ports, suspend, image), and a few scripted
 * sequences (suspend/template change/resume, headless renames), applied to the real apiserver with
 * the operator running; after each step the consistency oracle (tests/generated/oracle.ts) must hold:
 * every spec field shows up where it should in the children and the status.
 *
 * CI runs a small fixed set; `deno task fuzz` runs many more. Reproduce a failure with the seed it
 * prints: GENERATED_SEED=<seed> GENERATED_SEQUENCES=<n> deno test -A tests/integration/generated_input_test.ts
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import type { ConfigMap, Pod, Service } from "kubernetes-types/core/v1.d.ts";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import type { KubeClient } from "../../runtime/client/client.ts";
import { ApiError, isConflict, isNotFound } from "../../runtime/client/errors.ts";
import { ConfigMaps, Jobs, Pods, Services } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { MINICLUSTER_LABEL } from "../../controllers/minicluster/children/names.ts";
import { eventually, integrationTest, type TestEnv } from "../harness.ts";
import { scriptedSequences, sequenceArbitrary, type Spec } from "../generated/arbitraries.ts";
import { consistencyProblems, type Observed } from "../generated/oracle.ts";
import { withLoggedOperator } from "../generated/logged_operator.ts";
import { pool } from "../generated/script_checks.ts";

/** A fixed seed in CI; GENERATED_SEED=random (the fuzz task) picks a new one, printed. */
const SEED = Deno.env.get("GENERATED_SEED") === "random"
  ? Date.now() % 2 ** 31
  : Number(Deno.env.get("GENERATED_SEED") ?? "20261121");
const SEQUENCES = Number(Deno.env.get("GENERATED_SEQUENCES") ?? "15");
const PARALLEL = Number(Deno.env.get("GENERATED_PARALLEL") ?? "5");
/** How long the children may take to agree with the spec after a step. */
const CONVERGE_MS = Number(Deno.env.get("GENERATED_CONVERGE_MS") ?? "30000");

async function observe(env: TestEnv, name: string): Promise<Observed> {
  const { client, namespace } = env;
  const mc = await client.get<MiniCluster>(MiniClusters, namespace, name);
  const labelSelector = `${MINICLUSTER_LABEL}=${name}`;
  const list = async <T>(rt: Parameters<KubeClient["list"]>[0]) =>
    (await client.list<T>(rt, { namespace, labelSelector })).items;
  return {
    name,
    uid: mc.metadata!.uid!,
    generation: mc.metadata?.generation,
    status: mc.status,
    jobs: await list<Job>(Jobs),
    services: await list<Service>(Services),
    configMaps: await list<ConfigMap>(ConfigMaps),
    pods: await list<Pod>(Pods),
  };
}

/** Sets the spec (read, replace; again on a conflict with a status write). */
async function setSpec(client: KubeClient, namespace: string, name: string, spec: Spec) {
  for (;;) {
    const mc = await client.get<MiniCluster>(MiniClusters, namespace, name);
    try {
      return await client.replace(MiniClusters, { ...mc, spec });
    } catch (e) {
      if (!isConflict(e)) throw e;
    }
  }
}

integrationTest(
  "generated input: random valid MiniClusters and changes keep the children consistent",
  async (env) => {
    const { client, namespace } = env;
    const sequences = [
      ...fc.sample(sequenceArbitrary, { seed: SEED, numRuns: SEQUENCES }),
      ...scriptedSequences(),
    ];
    console.log(
      `generated input: seed ${SEED}, ${SEQUENCES} sequences ` +
        `(GENERATED_SEED=${SEED} GENERATED_SEQUENCES=${SEQUENCES} to reproduce)`,
    );
    const counts = { sequences: 0, steps: 0, refusedByDryRun: 0, failures: 0, crashes: 0 };
    const failures: string[] = [];

    try {
      await withLoggedOperator(env, async (op) => {
        await pool(
          sequences.map((s, i) => ({ ...s, i })),
          PARALLEL,
          async ({ spec, changes, i }) => {
            const name = `g-${i}`;
            const mc: MiniCluster = {
              apiVersion: "flux-framework.org/v1alpha2",
              kind: "MiniCluster",
              metadata: { name, namespace },
              spec,
            };
            const steps: string[] = [`create ${JSON.stringify(spec)}`];
            let jobFrom: Spec | null = null;
            const check = async (current: Spec) => {
              counts.steps++;
              try {
                await eventually(async () => {
                  // The Job is made from the first spec that does not suspend.
                  if (!jobFrom && !current.suspend) jobFrom = current;
                  const observed = await observe(env, name);
                  const problems = consistencyProblems(current, spec, observed, jobFrom);
                  if (problems.length > 0) throw new Error(problems.join("; "));
                }, { timeoutMs: CONVERGE_MS, intervalMs: 250 });
                return true;
              } catch (e) {
                counts.failures++;
                const failure = `sequence ${i} (seed ${SEED}) after:\n  ${
                  steps.join("\n  ")
                }\n  → ${e instanceof Error ? e.message : e}`;
                failures.push(failure);
                console.log(failure); // now, in case the whole run times out
                return false;
              }
            };
            try {
              await client.create(MiniClusters, mc, { dryRun: true });
            } catch (e) {
              if (!(e instanceof ApiError)) throw e;
              counts.refusedByDryRun++;
              failures.push(`sequence ${i}: a generated spec was refused: ${e.message}`);
              return;
            }
            await client.create(MiniClusters, mc);
            counts.sequences++;
            let current = spec;
            if (!await check(current)) return;
            for (const change of changes) {
              const next = change.apply(current);
              steps.push(change.what);
              try {
                await setSpec(client, namespace, name, next);
              } catch (e) {
                if (!(e instanceof ApiError)) throw e;
                counts.refusedByDryRun++;
                failures.push(`sequence ${i}: a generated change was refused: ${e.message}`);
                return;
              }
              current = next;
              if (!await check(current)) return;
            }
            await client.delete(MiniClusters, namespace, name);
          },
        );
        const crashes = op.crashes();
        counts.crashes = crashes.length + (op.exitedEarly ? 1 : 0);
        for (const r of crashes.slice(0, 10)) failures.push(`crash: ${JSON.stringify(r)}`);
      });
    } finally {
      const left = await client.list<MiniCluster>(MiniClusters, { namespace });
      await pool(left.items, 8, async (m) => {
        await client.patch(MiniClusters, namespace, m.metadata!.name!, {
          metadata: { finalizers: null },
        }, "merge").catch((e) => {
          if (!isNotFound(e)) throw e;
        });
      });
    }

    console.log(
      `generated input: ${counts.sequences} sequences run, ${counts.steps} steps checked, ` +
        `${counts.refusedByDryRun} refused by the API, ${counts.crashes} crashes, ` +
        `${counts.failures} failures (seed ${SEED})`,
    );
    assert.deepEqual(failures, [], failures.join("\n\n"));
  },
  { timeoutMs: Number(Deno.env.get("GENERATED_TIMEOUT_MS") ?? "150000") },
);
