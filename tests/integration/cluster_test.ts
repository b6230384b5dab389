// The test harness and the local cluster: a namespace per test, the CRDs installed, and — on
// the full cluster — pods scheduled onto KWOK's fake nodes and finite Jobs completing.

import assert from "node:assert/strict";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import {
  CustomResourceDefinitions,
  Jobs,
  Namespaces,
  Pods,
} from "../../runtime/client/resources.ts";
import { eventually, fullCluster, integrationTest, kubectl } from "../harness.ts";

interface Condition {
  type: string;
  status: string;
}
interface Job {
  status?: { conditions?: Condition[]; succeeded?: number };
}
interface Pod {
  spec?: { nodeName?: string };
  status?: { phase?: string; podIP?: string; conditions?: Condition[] };
}
interface Node {
  metadata: { name: string; annotations?: Record<string, string> };
}

const hasCondition = (conds: Condition[] | undefined, type: string) =>
  conds?.some((c) => c.type === type && c.status === "True") ?? false;

async function crdNames(): Promise<string[]> {
  const dir = join(import.meta.dirname!, "..", "..", "crds");
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (!/\.ya?ml$/.test(entry.name)) continue;
    for (const doc of parseAllDocuments(await Deno.readTextFile(join(dir, entry.name)))) {
      const obj = doc.toJS();
      if (obj?.kind === "CustomResourceDefinition") names.push(obj.metadata.name);
    }
  }
  return names;
}

integrationTest("harness gives each test a fresh namespace", async ({ client, namespace }) => {
  assert.match(namespace, /^t-harness-gives-each-test-a-fresh-namespac-[a-z0-9]{6}$/);
  const ns = await client.get<{ status?: { phase?: string } }>(Namespaces, undefined, namespace);
  assert.equal(ns.status?.phase, "Active");
});

integrationTest(
  "harness installs the CRDs of crds/ and they are Established",
  async ({ client }) => {
    for (const name of await crdNames()) {
      const crd = await client.get<{ status?: { conditions?: Condition[] } }>(
        CustomResourceDefinitions,
        undefined,
        name,
      );
      assert.ok(hasCondition(crd.status?.conditions, "Established"), `${name} Established`);
    }
  },
);

integrationTest("kubectl helper targets the test namespace", async (env) => {
  await kubectl(env, "create", "configmap", "probe", "--from-literal=a=b");
  const got = JSON.parse(await kubectl(env, "get", "configmap", "probe", "-o", "json"));
  assert.equal(got.metadata.namespace, env.namespace);
  assert.equal(got.data.a, "b");
});

integrationTest("a pod schedules onto a fake node and is Running", async (env) => {
  const { client, namespace } = env;
  await client.create(Pods, {
    metadata: { name: "sleeper", namespace },
    spec: { containers: [{ name: "main", image: "busybox", command: ["sleep", "infinity"] }] },
  });
  const pod = await eventually(async () => {
    const p = await client.get<Pod>(Pods, namespace, "sleeper");
    assert.equal(p.status?.phase, "Running");
    assert.ok(hasCondition(p.status?.conditions, "Ready"), "Ready");
    return p;
  }, { timeoutMs: 30_000 });
  const nodes = JSON.parse(await kubectl(env, "get", "nodes", "-o", "json")).items as Node[];
  const node = nodes.find((n) => n.metadata.name === pod.spec?.nodeName);
  assert.equal(node?.metadata.annotations?.["kwok.x-k8s.io/node"], "fake");
  assert.ok(pod.status?.podIP, "pod IP assigned by KWOK");
}, { ignore: !fullCluster() });

integrationTest("a Job running busybox true reaches Complete on KWOK nodes", async (env) => {
  const { client, namespace } = env;
  await kubectl(env, "create", "job", "hello", "--image=busybox", "--", "true");
  const job = await eventually(async () => {
    const j = await client.get<Job>(Jobs, namespace, "hello");
    assert.ok(hasCondition(j.status?.conditions, "Complete"), "Job Complete");
    return j;
  }, { timeoutMs: 45_000, intervalMs: 250 });
  assert.equal(job.status?.succeeded, 1);
}, { ignore: !fullCluster() });

integrationTest("a Job pod annotated keep-running stays Running until released", async (env) => {
  const { client, namespace } = env;
  await client.create(Jobs, {
    metadata: { name: "held", namespace },
    spec: {
      backoffLimit: 0,
      template: {
        metadata: { annotations: { "kwok.x-k8s.io/keep-running": "true" } },
        spec: {
          restartPolicy: "Never",
          containers: [{ name: "main", image: "busybox", command: ["true"] }],
        },
      },
    },
  });
  const podName = await eventually(async () => {
    const pods = await client.list<Pod & { metadata: { name: string } }>(Pods, {
      namespace,
      labelSelector: "job-name=held",
    });
    assert.equal(pods.items.length, 1);
    assert.equal(pods.items[0].status?.phase, "Running");
    return pods.items[0].metadata.name;
  }, { timeoutMs: 30_000 });
  // Well past the default 1 s completion delay: it must still run.
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal((await client.get<Pod>(Pods, namespace, podName)).status?.phase, "Running");

  await client.patch(Pods, namespace, podName, {
    metadata: { annotations: { "kwok.x-k8s.io/keep-running": null } },
  }, "merge");
  await eventually(async () => {
    const j = await client.get<Job>(Jobs, namespace, "held");
    assert.ok(hasCondition(j.status?.conditions, "Complete"), "Job Complete");
  }, { timeoutMs: 30_000, intervalMs: 250 });
}, { ignore: !fullCluster() });

integrationTest("a Job pod annotated with an exit code fails", async (env) => {
  const { client, namespace } = env;
  await client.create(Jobs, {
    metadata: { name: "broken", namespace },
    spec: {
      backoffLimit: 0,
      template: {
        metadata: { annotations: { "kwok.x-k8s.io/exit-code": "3" } },
        spec: {
          restartPolicy: "Never",
          containers: [{ name: "main", image: "busybox", command: ["false"] }],
        },
      },
    },
  });
  await eventually(async () => {
    const j = await client.get<Job>(Jobs, namespace, "broken");
    assert.ok(hasCondition(j.status?.conditions, "Failed"), "Job Failed");
  }, { timeoutMs: 30_000, intervalMs: 250 });
}, { ignore: !fullCluster() });
