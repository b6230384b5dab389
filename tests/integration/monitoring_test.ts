// deploy/monitoring/ against the operator it watches: the operator process (as the image runs it,
// testing/operator_process.ts) reconciles a MiniCluster on a real API server, and every metric the
// alert rules and the dashboard query must be a family of its /metrics, every label they match on
// a label of that family's samples; docs/operations.md must name every family it serves.
//
// A family registered but without samples yet still prints its # HELP and # TYPE lines, so the
// names are checked by family (a histogram's _bucket, _sum and _count by the histogram's name);
// labels only where the family has samples. The MiniCluster asks for Flux's queue so that the
// queue metrics have a labelled series even without pods.
//
// Also the uninstall section's way out: a MiniCluster deleted after the operator is gone stays on
// its finalizer, and the page's listing and patch, run as written, find it and let it go.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { Jobs } from "../../runtime/client/resources.ts";
import { OperatorProcess } from "../../testing/operator_process.ts";
import { parseMetrics } from "../../testing/metrics_text.ts";
import { sampleMiniCluster } from "../../testing/sample_minicluster.ts";
import { FINALIZER } from "../../controllers/minicluster/children/names.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import { eventually, integrationTest, kubectl } from "../harness.ts";
import {
  familyOf,
  metricFamilies,
  monitoringQueries,
  parsePromQL,
  SCRAPE_SERIES,
  TARGET_LABELS,
} from "../monitoring.ts";

const OPERATIONS_DOC = new URL("../../docs/operations.md", import.meta.url);

integrationTest(
  "monitoring: every metric of the rules and the dashboard is on a running operator's /metrics",
  async (env) => {
    const op = await OperatorProcess.start({
      kubeconfig: env.kubeconfig,
      namespaces: [env.namespace],
      // With leader election, as installed: leader_election_is_leader gets its series.
      args: ["--leader-elect", `--leader-election-namespace=${env.namespace}`],
    });
    try {
      await op.ready();
      await env.client.create(
        MiniClusters,
        sampleMiniCluster("watched", env.namespace, { flux: { queueReport: {} } }),
      );
      await eventually(() => env.client.get<Job>(Jobs, env.namespace, "watched"), {
        timeoutMs: 30_000,
      });
      await eventually(async () => {
        const mc = await env.client.get<MiniCluster>(MiniClusters, env.namespace, "watched");
        assert.ok(mc.status?.conditions?.some((c) => c.type === "Ready"), "no status yet");
      }, { timeoutMs: 30_000 });
      // The first status's delay is observed once its write is answered.
      const text = await eventually(async () => {
        const text = await op.metricsText();
        assert.match(text, /^minicluster_first_status_delay_seconds_count [1-9]/m);
        assert.match(text, /^leader_election_is_leader\{lease="[^"]+"\} 1$/m);
        return text;
      }, { timeoutMs: 30_000 });

      const families = metricFamilies(text);
      const samples = parseMetrics(text);
      const labelsOf = new Map<string, Set<string>>();
      for (const s of samples) {
        const set = labelsOf.get(s.name) ?? new Set<string>();
        for (const l of Object.keys(s.labels)) set.add(l);
        labelsOf.set(s.name, set);
      }

      const missing: string[] = [];
      const unknownLabels: string[] = [];
      const noSamples = new Set<string>();
      const used = new Set<string>();
      const queries = monitoringQueries();
      for (const { where, expr } of queries) {
        const { errors, selectors } = parsePromQL(expr);
        assert.deepEqual(errors, [], `${where} does not parse: ${expr}`);
        for (const { metric, labels } of selectors) {
          if (SCRAPE_SERIES.has(metric)) continue;
          const family = familyOf(metric, families);
          if (!family) {
            missing.push(`${where}: ${metric}`);
            continue;
          }
          used.add(family);
          const seen = labelsOf.get(metric);
          if (!seen) {
            noSamples.add(metric);
            continue;
          }
          for (const label of labels) {
            if (!TARGET_LABELS.has(label) && !seen.has(label)) {
              unknownLabels.push(`${where}: ${metric} has no label ${label}`);
            }
          }
        }
      }
      console.log(
        `${queries.length} queries over ${used.size} of the ${families.size} families of ` +
          `/metrics; without samples in this run (labels unchecked): ` +
          `${[...noSamples].sort().join(", ") || "none"}`,
      );
      // Both lists at once, so that one run shows every problem.
      assert.deepEqual({ missing, unknownLabels }, { missing: [], unknownLabels: [] });

      const doc = await Deno.readTextFile(OPERATIONS_DOC);
      const undocumented = [...families.keys()].filter((f) => !doc.includes(`\`${f}\``));
      assert.deepEqual(undocumented, [], "docs/operations.md does not name these families");
      // And its tables' rows, name and type, are the operator's.
      const rows = [
        ...doc.matchAll(
          /^\| `([a-zA-Z_:]+)` +\| (counter|gauge|histogram) +\| +(?:`([^`]*)`)? *\|/gm,
        ),
      ];
      assert.equal(rows.length, families.size, "a table row for each family");
      for (const [, name, type, labels] of rows) {
        assert.equal(families.get(name), type, name);
        // Labels where this run has samples (a histogram's are on its _count).
        const seen = labelsOf.get(type === "histogram" ? `${name}_count` : name);
        if (seen) assert.equal(labels ?? "", [...seen].join(", "), `${name}'s labels`);
      }

      // Gone while the operator runs, so that no finalizer outlives the test.
      await env.client.delete(MiniClusters, env.namespace, "watched");
      await eventually(async () => {
        const gone = await env.client.get(MiniClusters, env.namespace, "watched").then(
          () => false,
          (e) => isNotFound(e) || Promise.reject(e),
        );
        assert.ok(gone, "the MiniCluster is still there");
      }, { timeoutMs: 30_000 });
    } finally {
      await op.stop();
    }
  },
  { timeoutMs: 120_000 },
);

integrationTest(
  "operations: a MiniCluster deleted without the operator waits; the documented patch frees it",
  async (env) => {
    const doc = await Deno.readTextFile(OPERATIONS_DOC);
    const patch = /kubectl -n <namespace> patch mc <name> --type=merge -p '([^']+)'/.exec(doc);
    const listing = /deleting='([^']+)'/.exec(doc);
    assert.ok(patch && listing, "docs/operations.md lost its finalizer commands");
    assert.ok(doc.includes(`\`${FINALIZER}\``), `docs/operations.md does not name ${FINALIZER}`);

    const op = await OperatorProcess.start({
      kubeconfig: env.kubeconfig,
      namespaces: [env.namespace],
    });
    try {
      await op.ready();
      await env.client.create(MiniClusters, sampleMiniCluster("orphan", env.namespace));
      await eventually(async () => {
        const mc = await env.client.get<MiniCluster>(MiniClusters, env.namespace, "orphan");
        assert.ok(mc.metadata?.finalizers?.includes(FINALIZER), "no finalizer yet");
        await env.client.get<Job>(Jobs, env.namespace, "orphan");
      }, { timeoutMs: 30_000 });
    } finally {
      await op.stop();
    }

    await env.client.delete(MiniClusters, env.namespace, "orphan");
    await new Promise((r) => setTimeout(r, 2_000));
    const stuck = await env.client.get<MiniCluster>(MiniClusters, env.namespace, "orphan");
    assert.ok(stuck.metadata?.deletionTimestamp, "not being deleted");
    assert.deepEqual(stuck.metadata?.finalizers, [FINALIZER]);

    const listed = await kubectl(env, "get", "mc", "-o", `jsonpath=${listing[1]}`);
    assert.equal(listed, `${env.namespace} orphan\n`);
    await kubectl(env, "patch", "mc", "orphan", "--type=merge", "-p", patch[1]);
    await eventually(async () => {
      const gone = await env.client.get(MiniClusters, env.namespace, "orphan").then(
        () => false,
        (e) => isNotFound(e) || Promise.reject(e),
      );
      assert.ok(gone, "the MiniCluster is still there");
    }, { timeoutMs: 10_000 });
  },
  { timeoutMs: 90_000 },
);
