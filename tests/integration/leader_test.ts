/**
 * Leader election with two real operator processes (tests/fixtures/test_operator.ts) on the real
 * apiserver: only the Lease holder reconciles, the two never reconcile at the same time, a
 * SIGKILLed leader is replaced within the lease duration, and a SIGTERMed leader hands over at once.
 */
import assert from "node:assert/strict";
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import type { Lease } from "kubernetes-types/coordination/v1.d.ts";
import { fileURLToPath } from "node:url";
import type { KubeClient } from "../../runtime/client/client.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import { ConfigMaps, Leases } from "../../runtime/client/resources.ts";
import { CHILD_LABEL, PARENT_LABEL, RECONCILED_BY } from "../fixtures/test_operator.ts";
import { eventually, integrationTest } from "../harness.ts";

const OPERATOR = fileURLToPath(new URL("../fixtures/test_operator.ts", import.meta.url));
const LEASE = "runtime-test";

/** One test_operator process with its stderr captured line by line. */
class OperatorProcess {
  readonly lines: string[] = [];
  readonly #child: Deno.ChildProcess;
  readonly #reading: Promise<void>;
  readonly status: Promise<Deno.CommandStatus>;

  constructor(
    readonly identity: string,
    kubeconfig: string,
    namespace: string,
    timing: { lease: string; renew: string; retry: string },
    env: Record<string, string> = {},
  ) {
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-net",
        "--allow-read",
        "--allow-env",
        "--allow-sys=hostname",
        OPERATOR,
        `--kubeconfig=${kubeconfig}`,
        `--namespaces=${namespace}`,
        "--leader-elect",
        `--leader-election-namespace=${namespace}`,
        `--leader-election-id=${LEASE}`,
        `--leader-election-identity=${identity}`,
        `--lease-duration=${timing.lease}`,
        `--renew-deadline=${timing.renew}`,
        `--retry-period=${timing.retry}`,
        "--health-port=0",
        "--bind-address=127.0.0.1",
        "--log-format=json",
      ],
      env,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    this.#child = child;
    this.status = child.status;
    this.#reading = (async () => {
      let buffer = "";
      for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
        buffer += chunk;
        const parts = buffer.split("\n");
        buffer = parts.pop()!;
        this.lines.push(...parts);
      }
      if (buffer) this.lines.push(buffer);
    })();
  }

  kill(signal: Deno.Signal): void {
    try {
      this.#child.kill(signal);
    } catch {
      // already exited
    }
  }

  /** Waits for exit and the end of its output. */
  async finished(): Promise<Deno.CommandStatus> {
    const status = await this.status;
    await this.#reading;
    return status;
  }

  /**
   * [start, end] times of every reconcile; one that never ended (the process was killed in it)
   * ends at `diedAt`.
   */
  reconcileIntervals(diedAt = Infinity): [number, number][] {
    const out: [number, number][] = [];
    const open = new Map<string, number>();
    for (const line of this.lines) {
      let rec: { msg?: string; key?: string; t?: number };
      try {
        rec = JSON.parse(line);
      } catch {
        continue;
      }
      if (rec.msg === "reconcile start") open.set(rec.key!, rec.t!);
      if (rec.msg === "reconcile end") {
        out.push([open.get(rec.key!) ?? rec.t!, rec.t!]);
        open.delete(rec.key!);
      }
    }
    for (const start of open.values()) out.push([start, diedAt]);
    return out;
  }

  /** The health server's address, from its start-up log record. */
  address(): string | undefined {
    for (const line of this.lines) {
      try {
        const rec = JSON.parse(line);
        if (typeof rec.address === "string" && /metrics/.test(rec.msg)) return rec.address;
      } catch {
        // not JSON
      }
    }
    return undefined;
  }

  dump(): string {
    return `--- ${this.identity}\n${this.lines.slice(-40).join("\n")}`;
  }
}

async function holder(client: KubeClient, namespace: string): Promise<string | undefined> {
  try {
    const lease = await client.get<Lease>(Leases, namespace, LEASE);
    return lease.spec?.holderIdentity || undefined;
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

async function createParent(client: KubeClient, namespace: string, name: string, value: string) {
  await client.create<ConfigMap>(ConfigMaps, {
    metadata: { name, namespace, labels: { [PARENT_LABEL]: "true" } },
    data: { value },
  });
}

/** Waits until `<parent>-child` has `value` and was written by `by`. */
async function childReconciledBy(
  client: KubeClient,
  namespace: string,
  parent: string,
  value: string,
  by: string,
  timeoutMs = 15_000,
) {
  await eventually(async () => {
    const child = await client.get<ConfigMap>(ConfigMaps, namespace, `${parent}-child`);
    assert.equal(child.metadata?.labels?.[CHILD_LABEL], "true");
    assert.equal(child.data?.value, value);
    assert.equal(child.metadata?.annotations?.[RECONCILED_BY], by);
  }, { timeoutMs, intervalMs: 100 });
}

function assertNoOverlap(a: OperatorProcess, b: OperatorProcess, aDiedAt?: number): void {
  for (const [s1, e1] of a.reconcileIntervals(aDiedAt)) {
    for (const [s2, e2] of b.reconcileIntervals()) {
      assert.ok(
        e1 < s2 || e2 < s1,
        `${a.identity} [${s1}, ${e1}] overlaps ${b.identity} [${s2}, ${e2}]`,
      );
    }
  }
}

integrationTest(
  "leader election: one replica reconciles; failover after SIGKILL within the lease duration",
  async ({ client, namespace, kubeconfig }) => {
    const timing = { lease: "3s", renew: "2s", retry: "500ms" };
    // Slow reconciles widen the window in which an overlap would show.
    const env = { TEST_OPERATOR_RECONCILE_DELAY_MS: "150" };
    const a = new OperatorProcess("replica-a", kubeconfig, namespace, timing, env);
    const b = new OperatorProcess("replica-b", kubeconfig, namespace, timing, env);
    try {
      const first = await eventually(async () => {
        const h = await holder(client, namespace);
        assert.ok(h, "no leader yet");
        return h;
      }, { timeoutMs: 20_000 });
      const [leader, standby] = first === a.identity ? [a, b] : [b, a];

      for (let i = 0; i < 5; i++) await createParent(client, namespace, `p${i}`, `v${i}`);
      for (let i = 0; i < 5; i++) {
        await childReconciledBy(client, namespace, `p${i}`, `v${i}`, leader.identity);
      }
      assert.equal(standby.reconcileIntervals().length, 0, "the standby never reconciles");

      leader.kill("SIGKILL");
      const killedAt = Date.now();
      await leader.finished();
      await eventually(async () => {
        assert.equal(await holder(client, namespace), standby.identity);
      }, { timeoutMs: 10_000, intervalMs: 100 });
      const failoverMs = Date.now() - killedAt;
      // Lease duration 3 s from when the standby last saw it renewed, plus a retry period with
      // jitter; the rest is headroom for a loaded machine.
      assert.ok(failoverMs < 7_000, `failover took ${failoverMs} ms`);

      // The new leader takes over the existing work and handles new work.
      await childReconciledBy(client, namespace, "p0", "v0", standby.identity);
      await createParent(client, namespace, "after", "x");
      await childReconciledBy(client, namespace, "after", "x", standby.identity);
      assertNoOverlap(leader, standby, killedAt);
    } catch (e) {
      console.error(a.dump());
      console.error(b.dump());
      throw e;
    } finally {
      a.kill("SIGKILL");
      b.kill("SIGKILL");
      await a.finished();
      await b.finished();
    }
  },
  { timeoutMs: 90_000 },
);

integrationTest(
  "leader election: SIGTERM drains, releases the lease and exits 0; the standby takes over at once",
  async ({ client, namespace, kubeconfig }) => {
    // A long lease: a takeover much faster than 20 s can only come from the release.
    const timing = { lease: "20s", renew: "15s", retry: "500ms" };
    const a = new OperatorProcess("replica-a", kubeconfig, namespace, timing);
    const b = new OperatorProcess("replica-b", kubeconfig, namespace, timing);
    try {
      const first = await eventually(async () => {
        const h = await holder(client, namespace);
        assert.ok(h, "no leader yet");
        return h;
      }, { timeoutMs: 20_000 });
      const [leader, standby] = first === a.identity ? [a, b] : [b, a];
      await createParent(client, namespace, "p", "1");
      await childReconciledBy(client, namespace, "p", "1", leader.identity);

      // The runtime's behaviour is visible on /metrics, and /readyz says the caches synced.
      for (const replica of [leader, standby]) {
        await eventually(async () => {
          const ready = await fetch(`http://${replica.address()}/readyz`);
          assert.equal(ready.status, 200, await ready.text());
        });
      }
      const metrics = await (await fetch(`http://${leader.address()}/metrics`)).text();
      for (
        const series of [
          'reconcile_total{controller="test-parent",result="success"}',
          'reconcile_duration_seconds_count{controller="test-parent"}',
          'workqueue_adds_total{name="test-parent"}',
          'watch_relists_total{resource="configmaps"}',
          'api_requests_total{verb="apply",resource="configmaps",code="20',
          'leader_election_is_leader{lease="runtime-test"} 1',
        ]
      ) {
        assert.ok(metrics.includes(series), `/metrics lacks ${series}:\n${metrics}`);
      }

      leader.kill("SIGTERM");
      const stoppedAt = Date.now();
      const status = await leader.finished();
      assert.equal(status.code, 0, "a SIGTERMed operator exits 0");
      await eventually(async () => {
        assert.equal(await holder(client, namespace), standby.identity);
      }, { timeoutMs: 10_000, intervalMs: 50 });
      const takeoverMs = Date.now() - stoppedAt;
      // Well under the 20 s lease: only the release explains it (the rest is the leader's drain
      // and exit, and headroom for a loaded machine).
      assert.ok(takeoverMs < 8_000, `takeover took ${takeoverMs} ms`);
      await childReconciledBy(client, namespace, "p", "1", standby.identity);
      assertNoOverlap(leader, standby);
    } catch (e) {
      console.error(a.dump());
      console.error(b.dump());
      throw e;
    } finally {
      a.kill("SIGKILL");
      b.kill("SIGKILL");
      await a.finished();
      await b.finished();
    }
  },
  { timeoutMs: 90_000 },
);
