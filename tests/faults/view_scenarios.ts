/**
 * The stale- and missed-view scenarios run by views.ts: each provokes one kind of fault through the
 * proxy (delayed, dropped or coalesced watch events, a stale list, 410 Gone, 429/500/503, resets,
 * an unreachable apiserver) and says what it checked.
 */
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Secret } from "kubernetes-types/core/v1.d.ts";
import type { KubeClient } from "../../runtime/client/client.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import { Jobs, Secrets } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { eventually } from "../harness.ts";
import type { Sample } from "../../testing/metrics_text.ts";
import type { FaultProxy, ProxiedRequest } from "./proxy.ts";
import { settle, sleep } from "./env.ts";
import type { ViewScenario } from "./views.ts";

/** Records every parallelism the Job `name` ever had (a watch straight on the apiserver). */
function jobSizeHistory(client: KubeClient, ns: string, name: string) {
  const sizes: number[] = [];
  const abort = new AbortController();
  const done = (async () => {
    try {
      for await (
        const e of client.watch<Job>(Jobs, {
          namespace: ns,
          fieldSelector: `metadata.name=${name}`,
          signal: abort.signal,
        })
      ) {
        const p = e.object.spec?.parallelism;
        if (p !== undefined && sizes[sizes.length - 1] !== p) sizes.push(p);
      }
    } catch {
      // stream ended
    }
  })();
  return {
    sizes,
    stop: async () => {
      abort.abort();
      await done;
    },
  };
}

/** Requests (or refused connection attempts) per second in [from, to). */
/** `watch_relists_total` of the operator, by resource. */
async function relists(ctx: { operator(): { metrics(): Promise<Sample[]> } }) {
  const samples = await ctx.operator().metrics();
  return new Map(
    samples.filter((s) => s.name === "watch_relists_total").map((
      s,
    ) => [s.labels.resource, s.value]),
  );
}

function rate(requests: { at: number }[], from: number, to: number): number {
  return requests.filter((r) => r.at >= from && r.at < to).length / ((to - from) / 1000);
}

/** What the operator sent: requests that reached the proxy plus connections it refused. */
function attempts(proxy: FaultProxy): { at: number }[] {
  return [...proxy.requests, ...proxy.refused.map((at) => ({ at }))];
}

/** While the apiserver is "down", the request rate must fall (backoff) and stay low. */
async function assertBacksOff(
  proxy: FaultProxy,
  downMs: number,
): Promise<{ first: number; last: number; total: number }> {
  const from = performance.now();
  await sleep(downMs);
  const to = performance.now();
  const half = from + (to - from) / 2;
  const sent = attempts(proxy);
  const first = rate(sent, from, half);
  const last = rate(sent, half, to);
  const total = rate(sent, from, to);
  // Six watch streams and a handful of keys, each backing off: a few requests a second at most.
  assert.ok(total <= 10, `request storm while down: ${total.toFixed(1)} req/s`);
  assert.ok(
    last <= Math.max(first, 2),
    `no backoff: ${first.toFixed(1)} → ${last.toFixed(1)} req/s`,
  );
  return { first, last, total };
}

const fmt = (r: { first: number; last: number; total: number }) =>
  `${r.total.toFixed(1)} req/s while down (${r.first.toFixed(1)} → ${r.last.toFixed(1)})`;

export const VIEW_SCENARIOS: ViewScenario[] = [
  {
    name: "delayed-watch-events",
    ci: true,
    async run(ctx) {
      ctx.proxy.watchFilter = () => ({ delayMs: 700 });
      await ctx.create("a");
      await sleep(1_000);
      await ctx.patch("a", { size: 3 });
      await sleep(1_000);
      await ctx.patch("a", { logging: { quiet: true } });
      await sleep(2_000);
      ctx.proxy.watchFilter = undefined;
      return `converged ${await ctx.converged(["a"])} ms after the delays stopped`;
    },
  },
  {
    name: "dropped-watch-events",
    ci: true,
    async run(ctx) {
      await ctx.create("a");
      await ctx.converged(["a"]);
      // Half of all events are lost while the spec changes twice.
      ctx.proxy.watchFilter = () => ctx.random() < 0.5 ? "drop" : "pass";
      await ctx.patch("a", { size: 3 });
      await ctx.create("b");
      await sleep(1_500);
      await ctx.patch("a", { size: 4 });
      await sleep(2_000);
      // Heal: the streams end and the watch caches have moved on (410), as after a long outage.
      ctx.proxy.watchFilter = undefined;
      relistOnce(ctx.proxy);
      return `converged ${await ctx.converged(["a", "b"])} ms after the drops stopped`;
    },
  },
  {
    name: "unobserved-intermediate-states",
    ci: false,
    async run(ctx) {
      await ctx.create("a");
      await ctx.converged(["a"]);
      // Only the last of a burst of changes is seen (coalesced, as a slow informer sees them).
      let hold = true;
      ctx.proxy.watchFilter = (e) =>
        hold && e.object.kind === "MiniCluster" && e.type === "MODIFIED" ? "drop" : "pass";
      for (const size of [3, 1, 4, 2]) await ctx.patch("a", { size });
      hold = false;
      await ctx.patch("a", { size: 3 });
      return `converged ${await ctx.converged(["a"])} ms after the last change`;
    },
  },
  {
    name: "coalesced-delete-and-recreate",
    ci: true,
    async run(ctx) {
      const old = await ctx.create("a");
      await ctx.converged(["a"]);
      const oldCert = await ctx.client.get<Secret>(Secrets, ctx.namespace, "a-curve-cert");
      // The DELETED event of "a" is lost and the ADDED of its successor arrives as MODIFIED.
      let recreated = false;
      ctx.proxy.watchFilter = (e) => {
        if (e.object.kind !== "MiniCluster" || e.object.metadata?.name !== "a") return "pass";
        if (e.type === "DELETED") return "drop";
        if (e.type === "ADDED" && e.object.metadata?.uid !== old.metadata?.uid) {
          recreated = true;
          return { replace: { ...e, type: "MODIFIED" } };
        }
        return "pass";
      };
      await ctx.client.delete(MiniClusters, ctx.namespace, "a");
      await eventually(async () => {
        await ctx.client.get(MiniClusters, ctx.namespace, "a").then(
          () => assert.fail("a still exists"),
          (e) => assert.ok(isNotFound(e)),
        );
      }, { timeoutMs: 30_000 });
      const fresh = await ctx.create("a", { size: 3 });
      const ms = await ctx.converged(["a"]);
      assert.ok(recreated, "the successor's ADDED event never passed the proxy");
      const cert = await ctx.client.get<Secret>(Secrets, ctx.namespace, "a-curve-cert");
      assert.notEqual(cert.metadata?.uid, oldCert.metadata?.uid, "the old certificate survived");
      assert.notEqual(fresh.metadata?.uid, old.metadata?.uid);
      return `successor converged in ${ms} ms`;
    },
  },
  {
    name: "coalesced-job-replaced-by-stranger",
    ci: false,
    async run(ctx) {
      await ctx.create("a");
      await ctx.converged(["a"]);
      const job = await ctx.client.get<Job>(Jobs, ctx.namespace, "a");
      ctx.proxy.watchFilter = (e) => {
        if (e.object.kind !== "Job" || e.object.metadata?.name !== "a") return "pass";
        if (e.type === "DELETED") return "drop";
        if (e.type === "ADDED") return { replace: { ...e, type: "MODIFIED" } };
        return "pass";
      };
      // Someone deletes the Job and puts their own (suspended, not owned) Job under the name.
      await ctx.client.delete(Jobs, ctx.namespace, "a", {
        propagationPolicy: "Background",
        preconditions: { uid: job.metadata?.uid },
      });
      await eventually(async () => {
        await ctx.client.get(Jobs, ctx.namespace, "a").then(
          () => assert.fail("Job a still exists"),
          (e) => assert.ok(isNotFound(e)),
        );
      }, { timeoutMs: 30_000 });
      const strangerAt = performance.now();
      const stranger = await ctx.client.create<Job>(Jobs, {
        metadata: {
          name: "a",
          namespace: ctx.namespace,
          labels: { "app.kubernetes.io/managed-by": "minicluster-operator" },
        },
        spec: {
          suspend: true,
          template: {
            spec: { restartPolicy: "Never", containers: [{ name: "c", image: "busybox" }] },
          },
        },
      });
      await eventually(async () => {
        const mc = await ctx.client.get<MiniCluster>(MiniClusters, ctx.namespace, "a");
        const c = mc.status?.conditions?.find((c) => /NameTaken/.test(c.reason ?? ""));
        assert.ok(c, "no NameTaken condition");
      }, { timeoutMs: 30_000 });
      await settle(ctx.proxy);
      const now = await ctx.client.get<Job>(Jobs, ctx.namespace, "a");
      assert.equal(now.metadata?.uid, stranger.metadata?.uid, "the stranger's Job was replaced");
      assert.equal(now.spec?.parallelism, stranger.spec?.parallelism, "the stranger's Job changed");
      const touched = ctx.proxy.requests.filter((r) =>
        r.write && r.resource === "jobs" && r.name === "a" && r.at > strangerAt
      );
      assert.deepEqual(touched.map((r) => r.method), [], "the operator wrote to the stranger");
      // Give the name back (its DELETED event passes): the operator creates its Job again.
      ctx.proxy.watchFilter = undefined;
      await ctx.client.delete(Jobs, ctx.namespace, "a", {
        propagationPolicy: "Background",
        preconditions: { uid: stranger.metadata?.uid },
      });
      return `stranger left alone; converged ${await ctx.converged(["a"])} ms after it left`;
    },
  },
  {
    name: "stale-list-after-restart",
    ci: true,
    async run(ctx) {
      await ctx.create("a", { size: 2 });
      await ctx.converged(["a"]);
      // A restart makes the proxy record a list showing size 2; then the spec moves on to 3.
      ctx.proxy.forgetLists();
      await ctx.restart();
      await ctx.patch("a", { size: 3 });
      await ctx.converged(["a"]);
      const history = jobSizeHistory(ctx.client, ctx.namespace, "a");
      try {
        await sleep(300);
        // A restarted operator is served the old list (size 2), as by a lagging apiserver; its
        // watch from that list's resourceVersion then replays what it missed.
        ctx.proxy.rules = [
          (r) => r.list && r.resource === "miniclusters" ? { kind: "staleList" } : undefined,
        ];
        // The replay is slow to come, so the stale view lasts while reconciles run.
        ctx.proxy.watchFilter = (e) =>
          e.object.kind === "MiniCluster" ? { delayMs: 3_000 } : "pass";
        await ctx.restart();
        await sleep(4_000);
        ctx.proxy.rules = [];
        ctx.proxy.watchFilter = undefined;
        assert.ok(ctx.proxy.requests.some((r) => r.fault === "staleList"), "no stale list served");
        const ms = await ctx.converged(["a"]);
        await settle(ctx.proxy);
        assert.deepEqual(
          history.sizes.filter((s, i) => i === 0 || s !== history.sizes[i - 1]),
          [3],
          `the Job was resized on a stale view: ${history.sizes.join(" → ")}`,
        );
        return `no write on the stale view; converged ${ms} ms after`;
      } finally {
        await history.stop();
      }
    },
  },
  {
    name: "watch-410-gone",
    ci: true,
    async run(ctx) {
      await ctx.create("a");
      await ctx.converged(["a"]);
      ctx.proxy.rules = [(r) => r.watch ? { kind: "goneEvent" } : undefined];
      ctx.proxy.closeWatches();
      await ctx.patch("a", { size: 3 });
      const from = performance.now();
      await sleep(6_000);
      const r = rate(ctx.proxy.requests.filter((q) => q.list || q.watch), from, performance.now());
      assert.ok(r <= 10, `relist storm on 410: ${r.toFixed(1)} list+watch/s`);
      const relistsAtEnd = await relists(ctx);
      ctx.proxy.rules = [];
      const ms = await ctx.converged(["a"]);
      // Barrier: every stream's last watch was 410, so each relists once more after the storm;
      // until it has, its view may be stale and a fresh operator would see more than it does.
      const t0 = Date.now();
      await eventually(async () => {
        const now = await relists(ctx);
        const behind = [...relistsAtEnd].filter(([k, v]) => (now.get(k) ?? 0) <= v).map(([k]) => k);
        assert.deepEqual(behind, [], `streams not relisted since the storm: ${behind.join(", ")}`);
      }, { timeoutMs: 60_000, intervalMs: 250 });
      return `${r.toFixed(1)} list+watch/s while every watch was 410; converged ${ms} ms after, ` +
        `every stream relisted ${Date.now() - t0} ms later`;
    },
  },
  {
    name: "errors-429-500-503",
    ci: true,
    async run(ctx) {
      const codes = [429, 500, 503];
      ctx.proxy.rules = [
        (r) =>
          !r.watch && ctx.random() < 0.5
            ? {
              kind: "status",
              code: codes[r.id % 3],
              retryAfterSeconds: r.id % 3 === 0 ? 1 : undefined,
            }
            : undefined,
      ];
      await ctx.create("a");
      await ctx.create("b", { size: 1 });
      await sleep(2_000);
      await ctx.patch("a", { size: 3 });
      await sleep(4_000);
      ctx.proxy.rules = [];
      return `converged ${await ctx.converged(["a", "b"])} ms after the errors stopped`;
    },
  },
  {
    name: "connection-resets",
    ci: true,
    async run(ctx) {
      await ctx.create("a");
      const timer = setInterval(() => ctx.proxy.resetConnections(), 700);
      try {
        await sleep(1_500);
        await ctx.patch("a", { size: 3 });
        await ctx.create("b");
        await sleep(4_000);
      } finally {
        clearInterval(timer);
      }
      return `converged ${await ctx.converged(["a", "b"])} ms after the resets stopped`;
    },
  },
  {
    name: "apiserver-unreachable",
    ci: true,
    async run(ctx) {
      await ctx.create("a");
      await ctx.converged(["a"]);
      ctx.proxy.refusing = true;
      // A change the operator cannot see or act on yet.
      await ctx.patch("a", { size: 3 });
      const r = await assertBacksOff(ctx.proxy, 10_000);
      ctx.proxy.refusing = false;
      return `${fmt(r)}; converged ${await ctx.converged(["a"])} ms after`;
    },
  },
  {
    name: "apiserver-503",
    ci: false,
    async run(ctx) {
      await ctx.create("a");
      await ctx.converged(["a"]);
      ctx.proxy.rules = [() => ({ kind: "status", code: 503 })];
      ctx.proxy.closeWatches();
      await ctx.patch("a", { size: 3 });
      const r = await assertBacksOff(ctx.proxy, 10_000);
      ctx.proxy.rules = [];
      return `${fmt(r)}; converged ${await ctx.converged(["a"])} ms after`;
    },
  },
];

/** Ends every watch; the next watch of each collection gets 410 (forcing a relist), once. */
function relistOnce(proxy: FaultProxy): void {
  const gone = new Set<string>();
  const rule = (r: ProxiedRequest) => {
    if (!r.watch || gone.has(r.path)) return undefined;
    gone.add(r.path);
    return { kind: "goneEvent" } as const;
  };
  proxy.rules = [rule, ...proxy.rules];
  proxy.closeWatches();
}
