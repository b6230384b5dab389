/** The benchmark's command line. */
import { parseArgs } from "node:util";
import { REAL_CONTENDERS, type RealContenderName } from "./real/contenders.ts";

export interface Flags {
  ns: number[];
  size: number;
  concurrency: number;
  createConcurrency: number;
  idleMs: number;
  rss10k: boolean;
  kubeconfig?: string;
  out: string;
  echo: boolean;
  /** Side by side with the Go Flux Operator (bench/peer/). */
  peer: boolean;
  /** Repetitions per N of --peer (the order alternates). */
  reps: number;
  /** The contenders of --peer: both by default, or one of "ours" and "go". */
  only?: "ours" | "go";
  /** Writes in flight of our operator (its --max-writes-in-flight); undefined: its default. */
  writesInFlight?: number;
  /** --peer: V8's CPU profile of our operator over each run (bench/profile_summary.ts). */
  cpuProfile: boolean;
  /** --peer: our operator's V8 flags instead of the compile task's (an experiment). */
  operatorV8Flags?: string;
  /** Pacing mechanisms our operator runs without (its --pacing-off, docs/write-pacing.md). */
  pacingOff?: string;
  /** Broker start-up on the local cluster's real nodes (bench/real/nodes.ts). */
  real: boolean;
  /** Runs of --real (per size and contender). */
  runs: number;
  /** The MiniCluster sizes of --real. */
  realSizes: number[];
  /**
   * Who makes the pods in --real: this operator with the Flux view mounted or copied, the Go
   * operator, none (the floor of the copy and of the mounted view).
   */
  realContenders: RealContenderName[];
  /** The in-cluster operator's memory at 0 and N MiniClusters (bench/in_cluster_memory.ts). */
  inCluster: boolean;
  /** Start-up over N MiniClusters (default 10,000), ours and the Go operator (bench/startup.ts). */
  startup: boolean;
  /** Flux's own start-up, no Kubernetes: `flux start --test-size` (bench/real/flux_alone.ts). */
  fluxAlone: boolean;
}

export function flags(argv: string[]): Flags {
  const { values } = parseArgs({
    args: argv,
    options: {
      n: { type: "string" },
      size: { type: "string", default: "4" },
      concurrency: { type: "string", default: "4" },
      "create-concurrency": { type: "string", default: "16" },
      "idle-seconds": { type: "string", default: "60" },
      "rss-10k": { type: "boolean", default: false },
      kubeconfig: { type: "string" },
      out: { type: "string", default: "bench/results" },
      echo: { type: "boolean", default: false },
      peer: { type: "boolean", default: false },
      "peer-10k": { type: "boolean", default: false },
      reps: { type: "string", default: "1" },
      only: { type: "string" },
      "writes-in-flight": { type: "string" },
      "pacing-off": { type: "string" },
      "cpu-profile": { type: "boolean", default: false },
      "operator-v8-flags": { type: "string" },
      real: { type: "boolean", default: false },
      runs: { type: "string" },
      "real-sizes": { type: "string", default: "2,8,16" },
      "real-contenders": { type: "string", default: REAL_CONTENDERS.join(",") },
      "in-cluster": { type: "boolean", default: false },
      startup: { type: "boolean", default: false },
      "flux-alone": { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    console.log(
      "usage: deno task bench [--n=100,1000] [--size=4] [--concurrency=4] [--create-concurrency=16]\n" +
        "         [--idle-seconds=60] [--rss-10k] [--kubeconfig=PATH] [--out=bench/results] [--echo]\n" +
        "         [--writes-in-flight=N]           our operator's --max-writes-in-flight\n" +
        "         [--pacing-off=a,b]               our operator's --pacing-off (docs/write-pacing.md)\n" +
        "         [--peer [--reps=1] [--peer-10k] [--only=ours|go]]   side by side with the Go Flux Operator\n" +
        "         [--cpu-profile]                  with --peer: our operator's V8 CPU profile of each run\n" +
        "         [--operator-v8-flags=F]          with --peer: our operator's V8 flags instead of its image's\n" +
        "         [--real [--runs=3] [--real-sizes=2,8,16] [--real-contenders=C,C]]\n" +
        "                                          broker start-up on the real nodes of .cluster/ and its\n" +
        `                                          waterfall; C: ${REAL_CONTENDERS.join(", ")}\n` +
        "         [--flux-alone [--runs=5] [--real-sizes=2,8,16]]\n" +
        "                                          Flux alone (root): flux start --test-size in a chroot\n" +
        "         [--in-cluster [--n=1000]]        the in-cluster operator's memory on .cluster/\n" +
        "         [--startup [--n=10000] [--runs=5]] restarts over N MiniClusters, ours and the Go operator",
    );
    Deno.exit(0);
  }
  const int = (s: string, name: string) => {
    const v = Number(s);
    if (!Number.isInteger(v) || v < 0) throw new Error(`--${name}: ${s}`);
    return v;
  };
  const n = values.n ?? (values.startup ? "10000" : "100,1000");
  const ns = n.split(",").map((s) => int(s.trim(), "n")).filter((n) => n > 0);
  if (values["peer-10k"]) ns.push(10_000);
  return {
    ns: [...new Set(ns)].sort((a, b) => a - b),
    size: int(values.size, "size"),
    concurrency: int(values.concurrency, "concurrency"),
    createConcurrency: int(values["create-concurrency"], "create-concurrency"),
    idleMs: int(values["idle-seconds"], "idle-seconds") * 1000,
    rss10k: values["rss-10k"],
    kubeconfig: values.kubeconfig,
    out: values.out,
    echo: values.echo,
    peer: values.peer,
    reps: Math.max(1, int(values.reps, "reps")),
    only: only(values.only),
    writesInFlight: values["writes-in-flight"] === undefined
      ? undefined
      : int(values["writes-in-flight"], "writes-in-flight"),
    pacingOff: values["pacing-off"],
    cpuProfile: values["cpu-profile"],
    operatorV8Flags: values["operator-v8-flags"],
    real: values.real,
    runs: Math.max(1, int(values.runs ?? (values.real ? "3" : "5"), "runs")),
    realSizes: values["real-sizes"].split(",").map((s) => Math.max(1, int(s.trim(), "real-sizes"))),
    realContenders: realContenders(values["real-contenders"]),
    inCluster: values["in-cluster"],
    startup: values.startup,
    fluxAlone: values["flux-alone"],
  };
}

function realContenders(value: string): RealContenderName[] {
  const names = value.split(",").map((s) => s.trim());
  for (const n of names) {
    if (!(REAL_CONTENDERS as readonly string[]).includes(n)) {
      throw new Error(`--real-contenders: ${n} (${REAL_CONTENDERS.join(", ")})`);
    }
  }
  return names as RealContenderName[];
}

function only(value: string | undefined): "ours" | "go" | undefined {
  if (value === undefined || value === "ours" || value === "go") return value;
  throw new Error(`--only: ${value} (ours or go)`);
}

/** Our operator's --max-writes-in-flight and --pacing-off when the bench sets them. */
export function pacingArgs(f: Flags): string[] {
  return [
    ...(f.writesInFlight === undefined ? [] : [`--max-writes-in-flight=${f.writesInFlight}`]),
    ...(f.pacingOff === undefined ? [] : [`--pacing-off=${f.pacingOff}`]),
  ];
}
