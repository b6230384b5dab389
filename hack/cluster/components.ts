// Command lines of the cluster's components. Pure: everything they need comes in through
// `ComponentContext`, which keeps them easy to read side by side and to unit-test.

import { versionFlags } from "./kubernetes_version.ts";
import { FRONT_PROXY_CLIENT_NAME, type Pki } from "./pki.ts";
import { BRIDGE_IP } from "./real_node_config.ts";
import type { ComponentName, Ports } from "./state.ts";

const SERVICE_CIDR = "10.96.0.0/16";
/** First address of SERVICE_CIDR: the `kubernetes` Service, also a SAN of the serving cert. */
export const KUBERNETES_SERVICE_IP = "10.96.0.1";
/** Pod IPs KWOK hands out; disjoint from the service range. */
const POD_CIDR = "10.244.0.1/16";
const SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local";
/** KWOK manages exactly the Nodes carrying this annotation (see nodes.ts). */
export const FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node";

/**
 * Controllers the operator and its tests depend on: Jobs and their pods, garbage collection
 * through ownerReferences, namespace deletion, ServiceAccounts and their tokens, plus the usual
 * workload controllers so plain `kubectl` experiments behave. The node lifecycle controller is
 * needed too: it lifts the `node.kubernetes.io/not-ready` taint that admission puts on every new
 * Node once KWOK reports it Ready; without it nothing ever schedules.
 */
const CONTROLLERS = [
  "job-controller",
  "node-lifecycle-controller",
  "garbage-collector-controller",
  "namespace-controller",
  "serviceaccount-controller",
  "serviceaccount-token-controller",
  "replicaset-controller",
  "deployment-controller",
  "statefulset-controller",
  "daemonset-controller",
  "endpoints-controller",
  "endpointslice-controller",
  "endpointslice-mirroring-controller",
  "ttl-after-finished-controller",
  "pod-garbage-collector-controller",
  "cronjob-controller",
  "disruption-controller",
  "resourcequota-controller",
  "root-ca-certificate-publisher-controller",
  "clusterrole-aggregation-controller",
  // A claim binds to a volume made for it (examples/ with a PersistentVolumeClaim), and a claim or
  // volume in use keeps its protection finalizer only while it is used (namespace deletion waits
  // for it otherwise).
  "persistentvolume-binder-controller",
  "persistentvolume-protection-controller",
  "persistentvolumeclaim-protection-controller",
  // HorizontalPodAutoscalers (on a MiniCluster's scale subresource), with metrics from the
  // aggregated metrics APIs when `up --metrics` installs them.
  "horizontal-pod-autoscaler-controller",
];

export interface ComponentContext {
  bin: (name: ComponentName) => string;
  ports: Ports;
  pki: Pki;
  kubeconfig: string;
  etcdDataDir: string;
  kwokConfig: string;
  /** Of the binaries (e.g. "v1.37.2"): which feature gates and API versions they are given. */
  kubernetesVersion: string;
  /**
   * Real nodes run: pods must reach the apiserver through the `kubernetes` Service, so it
   * advertises the bridge address (endpoints refuse loopback) and listens beyond loopback (a
   * firewall chain keeps it to loopback and the bridge, see host.ts); `kubectl logs/exec` need a
   * client certificate for the kubelets.
   */
  realNodes: boolean;
  /** Extra kube-apiserver flags (`--enable-admission-plugins=...` for a hostile-environment test). */
  apiserverArgs?: readonly string[];
  /** The audit policy and log, when the cluster directory has a policy (see ClusterPaths). */
  audit?: { policy: string; log: string };
}

function etcdArgs(c: ComponentContext): string[] {
  const client = `http://127.0.0.1:${c.ports.etcdClient}`;
  const peer = `http://127.0.0.1:${c.ports.etcdPeer}`;
  return [
    "--name=minicluster",
    `--data-dir=${c.etcdDataDir}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=minicluster=${peer}`,
    // A throwaway cluster: durability is not worth the fsync latency.
    "--unsafe-no-fsync=true",
    "--log-level=warn",
  ];
}

export function apiserverArgs(c: ComponentContext): string[] {
  return [
    `--etcd-servers=http://127.0.0.1:${c.ports.etcdClient}`,
    `--bind-address=${c.realNodes ? "0.0.0.0" : "127.0.0.1"}`,
    `--advertise-address=${c.realNodes ? BRIDGE_IP : "127.0.0.1"}`,
    `--secure-port=${c.ports.apiserver}`,
    `--tls-cert-file=${c.pki.servingCert}`,
    `--tls-private-key-file=${c.pki.servingKey}`,
    `--client-ca-file=${c.pki.caCert}`,
    "--authorization-mode=RBAC,Node",
    `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
    `--service-account-key-file=${c.pki.serviceAccountPub}`,
    `--service-account-signing-key-file=${c.pki.serviceAccountKey}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    "--allow-privileged=true",
    "--profiling=false",
    // The aggregation layer (APIServices: metrics-server, KEDA), as kubeadm configures it.
    `--requestheader-client-ca-file=${c.pki.frontProxyCaCert}`,
    `--requestheader-allowed-names=${FRONT_PROXY_CLIENT_NAME}`,
    "--requestheader-username-headers=X-Remote-User",
    "--requestheader-group-headers=X-Remote-Group",
    "--requestheader-extra-headers-prefix=X-Remote-Extra-",
    `--proxy-client-cert-file=${c.pki.frontProxyClientCert}`,
    `--proxy-client-key-file=${c.pki.frontProxyClientKey}`,
    ...featureGateArgs(c),
    ...joined("--runtime-config", versionFlags(c.kubernetesVersion).runtimeConfig),
    ...(c.audit
      ? [
        `--audit-policy-file=${c.audit.policy}`,
        `--audit-log-path=${c.audit.log}`,
        "--audit-log-format=json",
        "--audit-log-maxsize=0",
      ]
      : []),
    ...(c.realNodes
      ? [
        // The admin identity (system:masters) passes the kubelets' webhook authorization.
        `--kubelet-client-certificate=${c.pki.adminCert}`,
        `--kubelet-client-key=${c.pki.adminKey}`,
        `--kubelet-certificate-authority=${c.pki.caCert}`,
        // A real node's hostname does not resolve on the machine; its InternalIP does.
        "--kubelet-preferred-address-types=InternalIP,Hostname",
      ]
      : [
        // The advertised address is loopback, which the endpoint reconciler refuses from 1.37 on
        // (a loopback endpoint is useless to pods). Only real nodes' pods reach the `kubernetes`
        // Service, so without them nothing needs its endpoints.
        "--endpoint-reconciler-type=none",
      ]),
    ...(c.apiserverArgs ?? []),
  ];
}

/** `--feature-gates` of the apiserver, controller manager and scheduler: the same set for all. */
function featureGateArgs(c: ComponentContext): string[] {
  return joined("--feature-gates", versionFlags(c.kubernetesVersion).featureGates);
}

/** `[flag=a,b]`, or nothing when `values` is empty. */
function joined(flag: string, values: readonly string[]): string[] {
  return values.length ? [`${flag}=${values.join(",")}`] : [];
}

/**
 * Flags shared by the controller manager and the scheduler (both serve /healthz over TLS). No
 * delegated authentication/authorization kubeconfigs: /healthz is served to anyone anyway, and
 * nothing else they serve is read.
 */
function servingClientArgs(c: ComponentContext, port: number): string[] {
  return [
    `--kubeconfig=${c.kubeconfig}`,
    "--bind-address=127.0.0.1",
    `--secure-port=${port}`,
    `--tls-cert-file=${c.pki.servingCert}`,
    `--tls-private-key-file=${c.pki.servingKey}`,
    "--leader-elect=false",
    "--profiling=false",
    ...featureGateArgs(c),
  ];
}

export function controllerManagerArgs(c: ComponentContext): string[] {
  return [
    ...servingClientArgs(c, c.ports.controllerManager),
    `--service-account-private-key-file=${c.pki.serviceAccountKey}`,
    `--root-ca-file=${c.pki.caCert}`,
    "--use-service-account-credentials=true",
    `--controllers=${[...CONTROLLERS, ...versionFlags(c.kubernetesVersion).controllers].join(",")}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    "--allocate-node-cidrs=false",
    // Finished pods are collected quickly instead of piling up (default 12500).
    "--terminated-pod-gc-threshold=500",
  ];
}

export function schedulerArgs(c: ComponentContext): string[] {
  return servingClientArgs(c, c.ports.scheduler);
}

export function kwokArgs(c: ComponentContext): string[] {
  return [
    `--kubeconfig=${c.kubeconfig}`,
    `--config=${c.kwokConfig}`,
    "--manage-all-nodes=false",
    `--manage-nodes-with-annotation-selector=${FAKE_NODE_ANNOTATION}=fake`,
    `--cidr=${POD_CIDR}`,
    "--node-lease-duration-seconds=40",
  ];
}

export function componentArgs(name: ComponentName, c: ComponentContext): string[] {
  switch (name) {
    case "etcd":
      return etcdArgs(c);
    case "kube-apiserver":
      return apiserverArgs(c);
    case "kube-controller-manager":
      return controllerManagerArgs(c);
    case "kube-scheduler":
      return schedulerArgs(c);
    case "kwok":
      return kwokArgs(c);
  }
}
