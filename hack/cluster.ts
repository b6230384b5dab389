// deno task cluster up|down|status — a Docker-free local Kubernetes cluster: etcd,
// kube-apiserver and (unless --control-plane-only) kube-controller-manager, kube-scheduler and
// KWOK with fake Nodes, all as local processes with their state in .cluster/.
//
//   up [--control-plane-only] [--nodes N] [--real-nodes N] [--containerd v2|debian] [--kueue]
//      [--metrics] [--keda] [--dir D]
//                                                      prints the kubeconfig path as last line
//   down [--dir D]                                     stops every process (also those recorded
//                                                      in D/*.pid), undoes what real nodes
//                                                      changed on the machine, removes D
//   status [--dir D] [--quiet]                         exit 0 when the cluster is healthy

import { parseArgs } from "node:util";
import { down, status, up } from "./cluster/lifecycle.ts";
import { parseContainerRuntime } from "./cluster/container_runtime.ts";

const USAGE = `usage: deno task cluster <up|down|status> [options]
  up       start (or reuse) the cluster; prints the kubeconfig path last
           --control-plane-only   only etcd + kube-apiserver
           --apiserver-arg FLAG   an extra kube-apiserver flag (repeatable; a fresh cluster only)
           --nodes N              fake KWOK nodes (default 4)
           --audit-policy FILE    the apiserver's audit policy (log: <dir>/logs/audit.log)
           --real-nodes N         real nodes beside them (kubelet + containerd, cluster DNS);
                                  needs root; builds the local images on first use
           --containerd R         the real nodes' runtime: v2 (default: containerd 2 and runc
                                  built from their Go modules; image volumes work) or debian
                                  (Debian's containerd 1.6 and runc 1.1; a pod with an image
                                  volume is never created); a running cluster keeps its own
           --kueue                Kueue (built from its Go module) on the last real node,
                                  installed from its chart
           --metrics              metrics-server (built from its Go module) on the last real
                                  node, from its chart: the metrics API the
                                  HorizontalPodAutoscaler reads CPU from
           --keda                 KEDA (built from its Go module) on the last real node, from
                                  its kustomize configuration
                                  (each add-on runs on a real node: without --real-nodes and
                                  none running, one is added, which needs root)
  down     stop every process of the cluster (and those recorded in its *.pid files), undo
           what real nodes changed on the machine, and remove its state
  status   show what runs (exit 0 when healthy, 1 otherwise); --quiet prints nothing
common:    --dir D                state directory (default .cluster)`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      "control-plane-only": { type: "boolean", default: false },
      nodes: { type: "string", default: "4" },
      "real-nodes": { type: "string", default: "0" },
      "apiserver-arg": { type: "string", multiple: true, default: [] },
      dir: { type: "string", default: ".cluster" },
      "audit-policy": { type: "string" },
      kueue: { type: "boolean", default: false },
      metrics: { type: "boolean", default: false },
      keda: { type: "boolean", default: false },
      containerd: { type: "string" },
      quiet: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  const [command] = positionals;
  if (values.help || !command) {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  switch (command) {
    case "up": {
      const count = (flag: "nodes" | "real-nodes") => {
        const n = Number(values[flag]);
        if (!Number.isInteger(n) || n < 0) throw new Error(`--${flag}: ${values[flag]}`);
        return n;
      };
      const mode = values["control-plane-only"] ? "control-plane-only" : "full";
      console.log(
        await up({
          dir: values.dir,
          mode,
          nodes: count("nodes"),
          realNodes: count("real-nodes"),
          apiserverArgs: values["apiserver-arg"],
          auditPolicy: values["audit-policy"],
          kueue: values.kueue,
          metrics: values.metrics,
          keda: values.keda,
          containerd: values.containerd === undefined
            ? undefined
            : parseContainerRuntime(values.containerd),
        }),
      );
      return 0;
    }
    case "down":
      await down(values.dir);
      return 0;
    case "status": {
      const s = await status(values.dir);
      if (!values.quiet) {
        if (s.components.length === 0) console.log(`no cluster in ${s.dir}`);
        else {
          console.log(`cluster in ${s.dir} (${s.mode}): ${s.healthy ? "healthy" : "NOT healthy"}`);
          for (const c of s.components) {
            console.log(
              `  ${c.name.padEnd(24)} ${c.running ? "running" : "stopped"} pid ${c.pid ?? "-"}`,
            );
          }
          for (const n of s.realNodes) {
            console.log(`  real node ${n.name.padEnd(14)} ${n.ready ? "Ready" : "NOT Ready"}`);
          }
          console.log(`kubeconfig: ${s.kubeconfig}`);
        }
      }
      return s.healthy ? 0 : 1;
    }
    default:
      console.error(USAGE);
      return 2;
  }
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (e) {
    console.error(`[cluster] error: ${e instanceof Error ? e.message : e}`);
    Deno.exit(1);
  }
}
