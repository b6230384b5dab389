/**
 * The two operators of the comparison, behind one small interface: how to start each against a
 * namespace, and its CRD and number of children per MiniCluster.
 */
import { join } from "node:path";
import { ensureGoOperator, runGoOperator } from "../../hack/peer/go_operator.ts";
import { OUR_CRD } from "../../hack/conformance/run.ts";
import { MiniClusterWorkspaces } from "../../api/workspace.ts";
import {
  ConfigMaps,
  Jobs,
  type ResourceType,
  Secrets,
  Services,
} from "../../runtime/client/resources.ts";
import type { CpuProfiler } from "../../testing/cpu_profile.ts";
import { OperatorProcess, readCpuSeconds, readRssBytes } from "../../testing/operator_process.ts";

export type ContenderName = "ours" | "go";

export interface RunningContender {
  cpuSeconds(): number;
  rssBytes(): number;
  stop(): Promise<void>;
  logTail(): string;
  /** V8's CPU profiler on the operator, when it was started with one (ours, `--cpu-profile`). */
  profiler?: () => Promise<CpuProfiler>;
  /** Its /metrics as served (ours). */
  metricsText?: () => Promise<string>;
}

export interface Contender {
  name: ContenderName;
  /** The audit log's user name of its client identity. */
  user: string;
  crd: string | string[];
  /**
   * Children per MiniCluster of the bench's MiniCluster (no services): ours makes the entrypoint
   * ConfigMap, the MiniClusterWorkspace, the CURVE Secret, the headless Service and the Job; the Go
   * operator the entrypoint ConfigMap (with the CURVE certificate in it), the headless Service
   * and the Job (its ensureMiniCluster).
   */
  children: number;
  /** The kinds its children are of (ours has a kind of its own for the workspace). */
  childKinds: ResourceType[];
  start(kubeconfig: string, namespace: string, logDir: string): Promise<RunningContender>;
}

export function ours(
  children: number,
  concurrency: number,
  echo: boolean,
  args: string[] = [],
  inspect = false,
  v8Flags?: string,
): Contender {
  return {
    name: "ours",
    user: "bench-ours",
    crd: OUR_CRD,
    children,
    childKinds: [MiniClusterWorkspaces, ConfigMaps, Secrets, Services, Jobs],
    async start(kubeconfig, namespace) {
      const op = await OperatorProcess.start({
        kubeconfig,
        namespaces: [namespace],
        concurrency,
        echo,
        args,
        inspect,
        v8Flags,
      });
      await op.ready();
      return {
        cpuSeconds: () => op.cpuSeconds(),
        rssBytes: () => op.rssBytes(),
        stop: async () => {
          await op.stop();
        },
        logTail: () => op.logTail(30),
        profiler: inspect ? () => op.profiler() : undefined,
        metricsText: () => op.metricsText(),
      };
    },
  };
}

/** The Go operator reconciles every namespace (it has no flag to watch fewer). */
export async function goOperator(): Promise<Contender> {
  const { binary, crd } = await ensureGoOperator();
  return {
    name: "go",
    user: "bench-go",
    crd,
    children: 3,
    childKinds: [ConfigMaps, Secrets, Services, Jobs],
    async start(kubeconfig, _namespace, logDir) {
      const logFile = join(logDir, `go-operator-${Date.now()}.log`);
      const p = await runGoOperator({ binary, kubeconfig, logFile });
      // controller-runtime logs "Starting workers" once its caches have synced.
      const deadline = Date.now() + 60_000;
      while (!p.logTail(200).includes("Starting workers")) {
        if (Date.now() > deadline) {
          await p.stop();
          throw new Error(`the Go operator did not start within 60 s:\n${p.logTail()}`);
        }
        await new Promise((r) => setTimeout(r, 200));
      }
      return {
        cpuSeconds: () => readCpuSeconds(p.pid),
        rssBytes: () => readRssBytes(p.pid),
        stop: () => p.stop(),
        logTail: () => p.logTail(30),
      };
    },
  };
}
