// Fake Nodes for KWOK. The annotation is what makes KWOK manage them (see components.ts);
// no taint, so ordinary pods (`kubectl create job ...`) schedule without tolerations.

import { FAKE_NODE_ANNOTATION } from "./components.ts";

const FAKE_NODE_PREFIX = "kwok-node-";

export function fakeNodeName(index: number): string {
  return `${FAKE_NODE_PREFIX}${index}`;
}

export function fakeNode(index: number): Record<string, unknown> {
  const name = fakeNodeName(index);
  const resources = { cpu: "32", memory: "256Gi", pods: "110", "ephemeral-storage": "1Ti" };
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      annotations: { [FAKE_NODE_ANNOTATION]: "fake", "node.alpha.kubernetes.io/ttl": "0" },
      labels: {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/role": "agent",
        "node-role.kubernetes.io/agent": "",
        type: "kwok",
      },
    },
    spec: {},
    status: { allocatable: resources, capacity: resources },
  };
}
