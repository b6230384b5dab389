// The operator as users run it: deploy/install.yaml applied to a cluster with a real node, the
// local image, the namespace's `restricted` Pod Security level, leader election by Lease.

import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { eventually } from "../harness.ts";
import { kubectl, OPERATOR_NAMESPACE, realTest } from "./env.ts";

async function operatorPods(): Promise<Pod[]> {
  const list = JSON.parse(
    await kubectl([
      "-n",
      OPERATOR_NAMESPACE,
      "get",
      "pods",
      "-l",
      "app.kubernetes.io/name=minicluster-operator",
      "-o",
      "json",
    ]),
  );
  return (list.items as Pod[]).filter((p) => !p.metadata?.deletionTimestamp);
}

async function leaseHolder(): Promise<string> {
  const lease = JSON.parse(
    await kubectl(["-n", OPERATOR_NAMESPACE, "get", "lease", "minicluster-operator", "-o", "json"]),
  );
  return lease.spec?.holderIdentity ?? "";
}

const ready = (p: Pod) =>
  p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;

realTest(
  "real: the operator runs from install.yaml as a restricted pod and hands its Lease over",
  async () => {
    const ns = JSON.parse(await kubectl(["get", "namespace", OPERATOR_NAMESPACE, "-o", "json"]));
    assert.equal(ns.metadata.labels["pod-security.kubernetes.io/enforce"], "restricted");

    // The rollout finished: one pod, Ready (its readiness probe is /readyz: caches synced).
    const [first] = await eventually(async () => {
      const pods = await operatorPods();
      if (pods.length !== 1 || !ready(pods[0])) throw new Error(`operator pods: ${pods.length}`);
      return pods;
    }, { timeoutMs: 60_000, intervalMs: 500 });
    const container = first.spec!.containers[0];
    assert.equal(container.securityContext?.readOnlyRootFilesystem, true);
    assert.equal(first.spec?.securityContext?.runAsUser, 65532);
    assert.ok(first.status?.containerStatuses?.[0].ready);
    const firstName = first.metadata!.name!;
    await eventually(async () => assert.equal(await leaseHolder(), firstName), {
      timeoutMs: 30_000,
      intervalMs: 500,
    });

    // Killing the pod: the Deployment's replacement takes the Lease over.
    const t0 = performance.now();
    await kubectl(["-n", OPERATOR_NAMESPACE, "delete", "pod", firstName, "--wait=false"]);
    const second = await eventually(async () => {
      const pods = (await operatorPods()).filter((p) => p.metadata?.name !== firstName && ready(p));
      if (pods.length !== 1) throw new Error("no Ready replacement yet");
      const holder = await leaseHolder();
      if (holder !== pods[0].metadata!.name) throw new Error(`the Lease is held by ${holder}`);
      return pods[0];
    }, { timeoutMs: 90_000, intervalMs: 500 });
    console.log(
      `  Lease handed from ${firstName} to ${second.metadata!.name} in ` +
        `${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
  },
);
