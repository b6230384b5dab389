/**
 * The operator's neighbours fail: the apiserver restarts mid-run (a private etcd + kube-apiserver
 * from hack/cluster, so the shared control plane is left alone), and the leader of two operator
 * replicas is SIGKILLed in the middle of its work. Either way no work may be lost (every
 * MiniCluster converges, including changes made while nobody could act) or done twice (no child
 * re-created, each certificate created exactly once, the standby writes nothing while it waits).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Lease } from "kubernetes-types/coordination/v1.d.ts";
import type { Secret } from "kubernetes-types/core/v1.d.ts";
import { KubeClient } from "../../runtime/client/client.ts";
import { Leases, Secrets } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { eventually } from "../harness.ts";
import { componentContext, down, up } from "../../hack/cluster/lifecycle.ts";
import { componentArgs } from "../../hack/cluster/components.ts";
import { spawnDaemon, stopGroups } from "../../hack/cluster/processes.ts";
import { ClusterPaths, readState, writeState } from "../../hack/cluster/state.ts";
import type { OperatorProcess } from "../../testing/operator_process.ts";
import { installCrds } from "../../testing/crds.ts";
import { FaultProxy, type ProxiedRequest } from "./proxy.ts";
import { faultMiniCluster } from "./crash.ts";
import { assertConverged } from "./views.ts";
import { assertGuardedWrites, settle, sleep, startOperator, uidsOf, withNamespace } from "./env.ts";

/** A private control plane (etcd + kube-apiserver) with the CRDs installed. */
async function privateControlPlane(): Promise<{ dir: string; kubeconfig: string }> {
  const dir = await Deno.makeTempDir({ prefix: "minicluster-faults-cp-" });
  try {
    const kubeconfig = await up({ dir, mode: "control-plane-only", nodes: 0 });
    await installCrds(kubeconfig);
    return { dir, kubeconfig };
  } catch (e) {
    await down(dir, { quiet: true });
    throw e;
  }
}

/** Stops the kube-apiserver of a cluster dir (etcd keeps running). */
async function stopApiserver(dir: string): Promise<void> {
  const paths = new ClusterPaths(dir);
  const state = (await readState(paths))!;
  const pid = state.pids["kube-apiserver"];
  if (pid) await stopGroups([pid], 2_000);
}

/** Starts the kube-apiserver again with the same flags and waits until it is ready. */
async function startApiserver(dir: string): Promise<void> {
  const paths = new ClusterPaths(dir);
  const state = (await readState(paths))!;
  const args = componentArgs("kube-apiserver", componentContext(paths, state));
  state.pids["kube-apiserver"] = spawnDaemon({
    binary: join(state.binDir, "kube-apiserver"),
    args,
    logFile: paths.log("kube-apiserver"),
    cwd: paths.dir,
  });
  await writeState(paths, state);
  const client = await KubeClient.fromKubeconfig(paths.kubeconfig, undefined, { timeoutMs: 2_000 });
  try {
    // Ready for the test's requests: the CRD's paths are served again (core paths come first).
    await eventually(() => client.list(MiniClusters, { namespace: "default" }), {
      timeoutMs: 60_000,
      intervalMs: 200,
    });
  } finally {
    client.close();
  }
}

async function certUid(client: KubeClient, ns: string, mc: string): Promise<string | undefined> {
  const s = await client.get<Secret>(Secrets, ns, `${mc}-curve-cert`);
  return s.metadata?.uid;
}

/** Successful creates of `name`'s curve Secret seen by the proxies. */
/** Creations of the certificate Secret: a create, or a create-only apply, answered 201 Created. */
function certCreates(proxies: FaultProxy[], mc: string): number {
  return proxies.flatMap((p) => p.requests).filter((r) =>
    (r.method === "POST" || r.method === "PATCH") && r.resource === "secrets" && r.code === 201 &&
    r.response?.includes(`"name":"${mc}-curve-cert"`)
  ).length;
}

const rate = (rs: ProxiedRequest[], from: number, to: number) =>
  rs.filter((r) => r.at >= from && r.at < to).length / ((to - from) / 1000);

/**
 * The apiserver stops right after two changes (one creation, one scale) and comes back ~8 s later;
 * meanwhile the operator backs off. After the restart everything converges, nothing is re-created.
 */
export async function apiserverRestart(): Promise<string> {
  const { dir, kubeconfig } = await privateControlPlane();
  const client = await KubeClient.fromKubeconfig(kubeconfig);
  try {
    return await withNamespace(client, "apiserver-restart", async (ns) => {
      const proxy = await FaultProxy.start({ kubeconfig });
      let op: OperatorProcess | undefined;
      try {
        op = await startOperator(proxy, ns);
        await client.create(MiniClusters, faultMiniCluster(ns, {}, "a"));
        await client.create(MiniClusters, faultMiniCluster(ns, {}, "b"));
        await eventually(async () => {
          for (const n of ["a", "b"]) await assertConverged(client, ns, n);
        }, { timeoutMs: 30_000, intervalMs: 250 });
        await settle(proxy);
        const before = await uidsOf(client, ns);

        // Mid-run: work is queued when the apiserver goes away.
        await client.create(MiniClusters, faultMiniCluster(ns, {}, "c"));
        await client.patch(MiniClusters, ns, "a", { spec: { size: 3 } }, "merge");
        await stopApiserver(dir);
        const from = performance.now();
        await sleep(8_000);
        const down = rate(proxy.requests, from, performance.now());
        assert.ok(
          down <= 10,
          `request storm while the apiserver was down: ${down.toFixed(1)} req/s`,
        );
        await startApiserver(dir);
        const healed = Date.now();
        await eventually(() => client.patch(MiniClusters, ns, "b", { spec: { size: 1 } }, "merge"));
        await eventually(async () => {
          for (const n of ["a", "b", "c"]) await assertConverged(client, ns, n);
        }, { timeoutMs: 30_000, intervalMs: 250 });
        const ms = Date.now() - healed;
        await settle(proxy);
        const after = await uidsOf(client, ns);
        for (const [key, uid] of before) assert.equal(after.get(key), uid, `${key} was re-created`);
        for (const n of ["a", "b", "c"]) {
          assert.ok(await certUid(client, ns, n));
          assert.ok(certCreates([proxy], n) <= 1, `${n}: certificate created twice`);
        }
        assertGuardedWrites(proxy.requests);
        return `${down.toFixed(1)} req/s while down; converged ${ms} ms after the restart`;
      } catch (e) {
        throw new Error(`${(e as Error).message}\n--- operator log ---\n${op?.logTail(25)}`);
      } finally {
        await op?.kill();
        await proxy.close();
      }
    });
  } finally {
    client.close();
    await down(dir, { quiet: true });
  }
}

const LEASE = "minicluster-operator-faults";

/**
 * Two replicas with leader election, each behind its own proxy (so each one's writes are counted).
 * The standby writes nothing but Lease attempts; the leader is SIGKILLed right after new work
 * arrives; the standby takes over and finishes it: nothing lost, nothing done twice.
 */
export async function leaderFailover(client: KubeClient, kubeconfig: string): Promise<string> {
  return await withNamespace(client, "leader-failover", async (ns) => {
    const proxies = [
      await FaultProxy.start({ kubeconfig }),
      await FaultProxy.start({ kubeconfig }),
    ];
    const ops: (OperatorProcess | undefined)[] = [];
    const args = (id: string) => [
      "--leader-elect",
      `--leader-election-namespace=${ns}`,
      `--leader-election-id=${LEASE}`,
      `--leader-election-identity=${id}`,
      "--lease-duration=4s",
      "--renew-deadline=3s",
      "--retry-period=1s",
    ];
    try {
      ops[0] = await startOperator(proxies[0], ns, args("r0"));
      ops[1] = await startOperator(proxies[1], ns, args("r1"));
      const holder = async () =>
        (await client.get<Lease>(Leases, ns, LEASE)).spec?.holderIdentity ?? "";
      const first = await eventually(async () => {
        const h = await holder();
        assert.ok(h === "r0" || h === "r1", "no leader yet");
        return h;
      }, { timeoutMs: 30_000 });
      const leader = first === "r0" ? 0 : 1;
      const standby = 1 - leader;

      for (const n of ["a", "b"]) await client.create(MiniClusters, faultMiniCluster(ns, {}, n));
      await eventually(async () => {
        for (const n of ["a", "b"]) await assertConverged(client, ns, n);
      }, { timeoutMs: 30_000, intervalMs: 250 });
      await settle(proxies[leader]);
      const standbyWrites = proxies[standby].requests.filter((r) =>
        r.write && r.code && r.code < 300 && r.resource !== "leases"
      );
      assert.deepEqual(standbyWrites.map((r) => `${r.method} ${r.path}`), [], "the standby wrote");
      const before = await uidsOf(client, ns);
      const certs = { a: await certUid(client, ns, "a"), b: await certUid(client, ns, "b") };

      // New work, and the leader dies in the middle of it.
      await client.create(MiniClusters, faultMiniCluster(ns, {}, "c"));
      await client.patch(MiniClusters, ns, "a", { spec: { size: 3 } }, "merge");
      await sleep(150);
      await ops[leader]!.kill();
      const killedAt = Date.now();
      await client.patch(MiniClusters, ns, "b", { spec: { size: 1 } }, "merge");
      await eventually(async () => assert.equal(await holder(), `r${standby}`), {
        timeoutMs: 15_000,
        intervalMs: 200,
      });
      const tookOver = Date.now() - killedAt;
      await eventually(async () => {
        for (const n of ["a", "b", "c"]) await assertConverged(client, ns, n);
      }, { timeoutMs: 30_000, intervalMs: 250 });
      const converged = Date.now() - killedAt;
      await settle(proxies[standby]);

      const after = await uidsOf(client, ns);
      for (const [key, uid] of before) assert.equal(after.get(key), uid, `${key} was re-created`);
      assert.equal(await certUid(client, ns, "a"), certs.a, "a: certificate regenerated");
      assert.equal(await certUid(client, ns, "b"), certs.b, "b: certificate regenerated");
      for (const n of ["a", "b", "c"]) {
        assert.equal(
          certCreates(proxies, n),
          1,
          `${n}: certificate created ${certCreates(proxies, n)} times`,
        );
      }
      for (const p of proxies) assertGuardedWrites(p.requests);
      return `standby took over in ${tookOver} ms, all converged ${converged} ms after the SIGKILL`;
    } catch (e) {
      const logs = ops.map((o, i) => `--- r${i} ---\n${o?.logTail(15)}`).join("\n");
      throw new Error(`${(e as Error).message}\n${logs}`);
    } finally {
      for (const o of ops) await o?.kill();
      for (const p of proxies) await p.close();
    }
  });
}
