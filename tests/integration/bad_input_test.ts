/**
 * The bad-input corpus (tests/fixtures/bad-input/) against the real apiserver with the operator
 * running in-process, all at once in one namespace next to a healthy MiniCluster:
 *
 * - a manifest the API must refuse is refused at apply time, with the expected message;
 * - an accepted manifest that cannot be built or applied gets its condition (reason and message)
 *   and a Warning event with that reason;
 * - an accepted, legitimately valid manifest is reconciled (Job and entrypoint ConfigMap);
 * - the operator never crashes (logged panics, unhandled rejections, an early exit), the healthy
 *   MiniCluster keeps being reconciled, every script of every entrypoint ConfigMap passes bash -n
 *   and shellcheck, and the scripts of the canary manifests run in a sandbox without any injected
 *   command running.
 *
 * Prints the counts: manifests, rejected at apply, reported by condition, reconciled, crashes.
 */
import assert from "node:assert/strict";
import type { ConfigMap, Event } from "kubernetes-types/core/v1.d.ts";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import type { KubeClient } from "../../runtime/client/client.ts";
import { ApiError, isNotFound } from "../../runtime/client/errors.ts";
import {
  ConfigMaps,
  Events,
  Jobs,
  Pods,
  type ResourceType,
  Secrets,
  Services,
} from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { MiniClusterWorkspaces } from "../../api/workspace.ts";
import { INLINE_CURVE_CERT_OPT_IN } from "../../controllers/minicluster/policy/curve_source.ts";
import { eventually, integrationTest } from "../harness.ts";
import { type CorpusCase, loadCorpus } from "../generated/bad_input_corpus.ts";
import { withLoggedOperator } from "../generated/logged_operator.ts";
import { pool, pwnedFiles, runInSandbox, scriptProblems } from "../generated/script_checks.ts";

const HEALTHY = "b-healthy";
/** Where the canary manifests point their paths (wiped before and after). */
const CANARY_DIR = "/tmp/mc-canary";

const KINDS: Record<string, ResourceType> = {
  ConfigMap: ConfigMaps,
  Secret: Secrets,
  Service: Services,
  Pod: Pods,
  Job: Jobs,
  MiniClusterWorkspace: MiniClusterWorkspaces,
};

type Condition = { type: string; status: string; reason: string; message: string };

function conditionOf(mc: MiniCluster, type: string): Condition | undefined {
  return (mc.status?.conditions as Condition[] | undefined)?.find((c) => c.type === type);
}

/** Whether the operator has reported on the MiniCluster's current generation. */
function settled(mc: MiniCluster): boolean {
  return mc.status?.observedGeneration === mc.metadata?.generation &&
    conditionOf(mc, "SpecInvalid") !== undefined;
}

/** What is wrong with an accepted case's outcome (empty when it is as expected). */
function judge(c: CorpusCase, mc: MiniCluster, events: Event[], job?: Job): string[] {
  const problems: string[] = [];
  const where = c.file;
  const invalid = conditionOf(mc, "SpecInvalid");
  const unappliable = conditionOf(mc, "Unappliable");
  const describe = `SpecInvalid=${invalid?.status}/${invalid?.reason} (${invalid?.message}); ` +
    `Unappliable=${unappliable?.status}/${unappliable?.reason} (${unappliable?.message})`;
  const expectCondition = (cond: Condition | undefined, type: string) => {
    if (cond?.status !== "True" || cond.reason !== c.reason) {
      problems.push(`${where}: want ${type}=True/${c.reason}; got ${describe}`);
      return;
    }
    for (const want of c.expect) {
      if (!cond.message.includes(want)) {
        problems.push(`${where}: ${type} message lacks "${want}": ${cond.message}`);
      }
    }
    const event = events.find((e) => e.reason === c.reason);
    if (!event) problems.push(`${where}: no ${c.reason} event`);
    else if (event.type !== "Warning") {
      problems.push(`${where}: the ${c.reason} event is not a Warning`);
    }
  };
  switch (c.outcome) {
    case "invalid":
      expectCondition(invalid, "SpecInvalid");
      if (job) problems.push(`${where}: an invalid spec got a Job`);
      break;
    case "unappliable":
      expectCondition(unappliable, "Unappliable");
      if (invalid?.status !== "False") {
        problems.push(`${where}: want SpecInvalid=False; ${describe}`);
      }
      break;
    case "reconciled":
      if (invalid?.status !== "False" || unappliable?.status !== "False") {
        problems.push(`${where}: want it reconciled; got ${describe}`);
      }
      if (!job) problems.push(`${where}: no Job`);
      break;
  }
  return problems;
}

async function createAll(client: KubeClient, namespace: string, objs: Record<string, unknown>[]) {
  for (const obj of objs) {
    const rt = KINDS[obj.kind as string];
    if (!rt) throw new Error(`no resource type for setup kind ${obj.kind}`);
    const meta = (obj.metadata ?? {}) as Record<string, unknown>;
    await client.create(rt, { ...obj, metadata: { ...meta, namespace } });
  }
}

integrationTest(
  "bad-input corpus: refused with a message, or reported, or reconciled; never a crash",
  async (env) => {
    const { client, namespace } = env;
    // BAD_INPUT_ONLY=<regexp of files> runs part of the corpus (to debug one case).
    const only = Deno.env.get("BAD_INPUT_ONLY");
    const corpus = (await loadCorpus()).filter((c) => !only || new RegExp(only).test(c.file));
    if (!only) {
      assert.ok(
        corpus.length >= 100,
        `the corpus has ${corpus.length} manifests, want at least 100`,
      );
    }
    const names = corpus.filter((c) => c.outcome !== "rejected").map((c) =>
      c.miniCluster.metadata!.name!
    );
    assert.equal(new Set(names).size, names.length, "accepted manifests need distinct names");
    await Deno.remove(CANARY_DIR, { recursive: true }).catch(() => {});

    const failures: string[] = [];
    const t0 = Date.now();
    const phase = (what: string) => {
      console.log(`[bad-input ${((Date.now() - t0) / 1000).toFixed(1)} s] ${what}`);
      const debug = Deno.env.get("BAD_INPUT_DEBUG_FILE");
      if (debug) Deno.writeTextFileSync(debug, failures.join("\n"));
    };
    const counts = {
      manifests: corpus.length,
      rejected: 0,
      reportedByCondition: 0,
      reconciled: 0,
      scripts: 0,
      canariesRun: 0,
      crashes: 0,
    };

    try {
      await withLoggedOperator(env, async (op) => {
        // The healthy neighbour first, reconciled before the storm.
        await client.create(MiniClusters, {
          apiVersion: "flux-framework.org/v1alpha2",
          kind: "MiniCluster",
          metadata: { name: HEALTHY, namespace },
          spec: { size: 2, containers: [{ image: "ghcr.io/rse-ops/accounting:app-latest" }] },
        });
        await eventually(() => client.get<Job>(Jobs, namespace, HEALTHY), { timeoutMs: 20_000 });

        phase("healthy MiniCluster reconciled");
        for (const c of corpus) await createAll(client, namespace, c.setup);

        await pool(corpus, 8, async (c) => {
          const mc = { ...c.miniCluster, metadata: { ...c.miniCluster.metadata, namespace } };
          try {
            await client.create(MiniClusters, mc);
          } catch (e) {
            if (!(e instanceof ApiError)) throw e;
            if (c.outcome !== "rejected") {
              failures.push(`${c.file}: refused at apply but expected ${c.outcome}: ${e.message}`);
              return;
            }
            counts.rejected++;
            for (const want of c.expect) {
              if (!e.message.includes(want)) {
                failures.push(`${c.file}: the API's message lacks "${want}": ${e.message}`);
              }
            }
            return;
          }
          if (c.outcome === "rejected") failures.push(`${c.file}: accepted but should be refused`);
        });

        phase("corpus applied");
        const accepted = corpus.filter((c) => c.outcome !== "rejected");
        // Every accepted MiniCluster reported on (observedGeneration) and judged as expected.
        const judged = new Map<string, string[]>();
        await eventually(async () => {
          const list = await client.list<MiniCluster>(MiniClusters, { namespace });
          const byName = new Map(list.items.map((m) => [m.metadata!.name!, m]));
          const events = (await client.list<Event>(Events, { namespace })).items;
          const jobs = new Map(
            (await client.list<Job>(Jobs, { namespace })).items.map((j) => [j.metadata!.name!, j]),
          );
          const pending: string[] = [];
          for (const c of accepted) {
            const name = c.miniCluster.metadata!.name!;
            const mc = byName.get(name);
            if (!mc || !settled(mc)) {
              pending.push(c.file);
              continue;
            }
            const own = events.filter((e) => e.involvedObject?.name === name);
            const job = jobs.get(name);
            const owned = job?.metadata?.ownerReferences?.some((o) => o.uid === mc.metadata?.uid);
            judged.set(c.file, judge(c, mc, own, owned ? job : undefined));
          }
          const wrong = [...judged.values()].flat();
          if (pending.length > 0 || wrong.length > 0) {
            throw new Error(
              `${pending.length} not reported yet (${pending.slice(0, 5).join(", ")}); ` +
                `${wrong.length} problems:\n${wrong.join("\n")}`,
            );
          }
        }, { timeoutMs: 90_000, intervalMs: 1_000 }).catch((e) => failures.push(e.message));
        for (const c of accepted) {
          if ((judged.get(c.file) ?? ["x"]).length > 0) continue;
          if (c.outcome === "reconciled") counts.reconciled++;
          else counts.reportedByCondition++;
        }

        phase("outcomes judged");
        if (only) console.log(op.lines.filter((l) => !l.includes('"debug"')).join("\n"));
        // The healthy MiniCluster was reconciled all along and still is.
        const healthy = await client.get<MiniCluster>(MiniClusters, namespace, HEALTHY);
        for (const type of ["SpecInvalid", "Unappliable"]) {
          const cond = conditionOf(healthy, type);
          if (cond?.status !== "False") {
            failures.push(
              `${HEALTHY}: ${type} is ${cond?.status}/${cond?.reason}: ${cond?.message}`,
            );
          }
        }
        const healthyJob = await client.get<Job>(Jobs, namespace, HEALTHY);
        if (healthyJob.spec?.parallelism !== 2) {
          failures.push(`${HEALTHY}: Job parallelism changed`);
        }

        // Every script of every entrypoint ConfigMap.
        const configMaps = (await client.list<ConfigMap>(ConfigMaps, { namespace })).items
          .filter((cm) => cm.metadata?.name?.endsWith("-entrypoint") && cm.data);
        const userShell = new Set(
          corpus.filter((c) => c.userShell).map((c) =>
            `${c.miniCluster.metadata!.name}-entrypoint`
          ),
        );
        const scripts = configMaps.flatMap((cm) =>
          Object.entries(cm.data ?? {}).map(([key, text]) => ({
            label: `${cm.metadata!.name}/${key}`,
            text,
            severity: userShell.has(cm.metadata!.name!) ? "error" : "warning",
          }))
        );
        counts.scripts = scripts.length;
        // Most scripts differ only by the MiniCluster's name: check each distinct one once.
        const distinct = new Map<string, (typeof scripts)[number]>();
        for (const s of scripts) {
          const owner = s.label.slice(0, s.label.indexOf("-entrypoint/"));
          distinct.set(`${s.severity}\0${s.text.replaceAll(owner, "MC_NAME")}`, s);
        }
        const checked = await pool(
          [...distinct.values()],
          4,
          (s) => scriptProblems(s.label, s.text, s.severity),
        );
        for (const problems of checked) {
          failures.push(...problems);
        }

        phase(`${scripts.length} scripts checked (${distinct.size} distinct)`);
        // The canaries: their scripts run, nothing injected runs.
        const byName = new Map(configMaps.map((cm) => [cm.metadata!.name!, cm]));
        for (const c of corpus.filter((c) => c.canary)) {
          const name = c.miniCluster.metadata!.name!;
          const cm = byName.get(`${name}-entrypoint`);
          if (!cm) {
            failures.push(`${c.file}: no entrypoint ConfigMap to run`);
            continue;
          }
          const container = c.miniCluster.spec.flux?.container;
          failures.push(
            ...await runInSandbox(c.file, cm.data ?? {}, {
              name,
              mountPath: container?.mountPath,
              viewName: container?.name,
              extraDirs: [CANARY_DIR],
            }),
          );
          counts.canariesRun++;
        }
        phase("canaries run");
        // Relative canaries would land in the operator's or the test's working directory.
        const stray = [
          ...await pwnedFiles(Deno.cwd(), { recursive: false }),
          ...await pwnedFiles("/tmp", { recursive: false }),
        ];
        if (stray.length > 0) failures.push(`injected commands ran: ${stray.join(", ")}`);

        const crashes = op.crashes();
        counts.crashes = crashes.length + (op.exitedEarly ? 1 : 0);
        for (const r of crashes.slice(0, 10)) failures.push(`crash: ${JSON.stringify(r)}`);
        if (op.exitedEarly) failures.push("the operator exited on its own");
        phase("stopping the operator");
      });
      phase("operator stopped");
    } finally {
      await releaseAll(client, namespace);
      await Deno.remove(CANARY_DIR, { recursive: true }).catch(() => {});
    }

    console.log(
      `bad-input corpus: ${counts.manifests} manifests, ${counts.rejected} rejected at apply, ` +
        `${counts.reportedByCondition} reported by condition and event, ${counts.reconciled} ` +
        `reconciled, ${counts.scripts} scripts checked, ${counts.canariesRun} canaries run, ` +
        `${counts.crashes} crashes, ${failures.length} failures`,
    );
    assert.deepEqual(failures, [], failures.join("\n"));
  },
  // The corpus gives flux.curveCert certificates real Flux would refuse, to see them reported: its
  // namespace opts in to the field the install's admission policy refuses elsewhere.
  {
    timeoutMs: 300_000,
    namespaceLabels: { [INLINE_CURVE_CERT_OPT_IN.label]: INLINE_CURVE_CERT_OPT_IN.value },
  },
);

/** Drops the finalizers (the operator is stopped), so the namespace can go. */
async function releaseAll(client: KubeClient, namespace: string): Promise<void> {
  const list = await client.list<MiniCluster>(MiniClusters, { namespace });
  await pool(list.items, 8, async (mc) => {
    await client.patch(MiniClusters, namespace, mc.metadata!.name!, {
      metadata: { finalizers: null },
    }, "merge").catch((e) => {
      if (!isNotFound(e)) throw e;
    });
  });
}
