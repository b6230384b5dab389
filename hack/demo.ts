// deno task demo [--simulated] — the whole thing in one command, on a fresh machine:
//   local cluster (etcd, apiserver, controller manager, scheduler, KWOK nodes and a real node with
//   the local images) → the CRDs of crds/ → the operator (a background process, logs in
//   .cluster/operator.log) → examples/hello-world.yaml on the real node, with the local Flux images
//   → its brokers really run: wait until it Succeeded → print what the lead broker reported.
//
// --simulated skips the real node (and the image builds, ~25 minutes on the first run): the
// example runs on KWOK's fake nodes, whose pods are kept running, and the demo waits for Ready.
//
// The operator keeps running afterwards so you can play with it; `./task cluster down` stops it
// together with the cluster (it runs in its own session, recorded in .cluster/operator.pid, and
// `down` stops every process group recorded there). Running the demo again restarts the operator
// on the current code and reuses the cluster.

import { kubectl } from "./kubectl.ts";
import { CRD_FILES } from "./crd_files.ts";
import { installCrds } from "../testing/crds.ts";
import { clusterFluxViewMount } from "../testing/flux_view_mount.ts";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { parse, stringify } from "yaml";
import { startRecorded, up } from "./cluster/lifecycle.ts";
import { groupMembers } from "./cluster/processes.ts";
import { REAL_NODE_LABEL } from "./cluster/real_node_config.ts";
import { FLUX_APP_IMAGE, FLUX_VIEW_IMAGE } from "./images/refs.ts";
import { compilePermissions } from "./permissions.ts";

const ROOT = resolve(new URL("..", import.meta.url).pathname);
const DIR = join(ROOT, ".cluster");
const OPERATOR_LOG = join(DIR, "operator.log");
const EXAMPLE = join(ROOT, "examples", "hello-world.yaml");
const READY_TIMEOUT = "180s";
/** Printed by the demo's script before each Flux command, and read back from the pod's log. */
const COMMAND_MARK = "demo$ ";
/** The namespace the demo's operator watches and the example goes to. */
const NAMESPACE = "default";

const say = (msg: string) => console.error(`[demo] ${msg}`);

/**
 * The example as the demo runs it on a real node: the local Flux images, pinned to the real
 * node, and its command run by the lead broker on every node after `flux resource list`
 * (launcher mode: the script is Flux's initial program, so the instance ends when it does).
 */
export function realManifest(exampleYaml: string): string {
  const mc = parse(exampleYaml);
  const [flux] = mc.spec.containers;
  const size = mc.spec.size ?? 1;
  const steps = ["flux resource list", `flux run -N${size} --label-io ${flux.command}`];
  mc.spec.containers = [{
    ...flux,
    image: FLUX_APP_IMAGE,
    command: undefined,
    launcher: true,
    commands: {
      ...flux.commands,
      script: steps.map((c) => `echo ${JSON.stringify(COMMAND_MARK + c)}\n${c}`).join("\n"),
    },
  }];
  mc.spec.flux = {
    ...mc.spec.flux,
    container: { ...mc.spec.flux?.container, image: FLUX_VIEW_IMAGE },
  };
  mc.spec.pod = {
    ...mc.spec.pod,
    nodeSelector: { ...mc.spec.pod?.nodeSelector, [REAL_NODE_LABEL]: "true" },
    tolerations: [
      ...(mc.spec.pod?.tolerations ?? []),
      { key: REAL_NODE_LABEL, operator: "Exists", effect: "NoSchedule" },
    ],
  };
  return stringify(mc);
}

/** What the demo's script printed in the lead broker's log: each command and its output. */
export function reportedByLeadBroker(log: string): string {
  const lines = log.split("\n");
  const first = lines.findIndex((l) => l.startsWith(COMMAND_MARK));
  if (first < 0) return "";
  return lines.slice(first)
    // Broker log lines (`<6>broker.info[0]: ...`) and the script's own closing lines are noise.
    .filter((l) => !/^<\d>/.test(l) && !l.startsWith("Flux finished with exit code"))
    .map((l) => l.startsWith(COMMAND_MARK) ? `$ ${l.slice(COMMAND_MARK.length)}` : l)
    .join("\n").trimEnd();
}

/**
 * What a run of the demo on a real node must have printed, else what is missing: the lead broker's
 * `flux resource list` with every broker of the example free, and its command's output from each
 * rank. `./task test` runs the demo from a clean state and checks its output with this.
 */
export function demoOutputProblems(stdout: string, exampleYaml: string): string[] {
  const mc = parse(exampleYaml);
  const size: number = mc.spec.size ?? 1;
  const problems: string[] = [];
  const lines = stdout.split("\n");
  const list = lines.findIndex((l) => l.trim() === "$ flux resource list");
  if (list < 0) return ["no `$ flux resource list` in what the lead broker reported"];
  const free = lines.slice(list + 1).find((l) => /^\s*free\s/.test(l));
  const nodes = free?.trim().split(/\s+/)[1];
  if (Number(nodes) !== size) {
    problems.push(`flux resource list shows ${nodes ?? "no"} free nodes, not ${size}: ${free}`);
  }
  const echoed = String(mc.spec.containers[0].command).replace(/^echo\s+/, "");
  for (let rank = 0; rank < size; rank++) {
    if (!lines.includes(`${rank}: ${echoed}`)) {
      problems.push(`no "${rank}: ${echoed}" from rank ${rank}`);
    }
  }
  if (!/^MiniCluster \S+ Succeeded/m.test(stdout)) {
    problems.push("no `MiniCluster … Succeeded` line");
  }
  return problems;
}

/** The example as the demo applies it with --simulated: KWOK's pods stay Running (Ready shows). */
export function simulatedManifest(exampleYaml: string): string {
  const mc = parse(exampleYaml);
  // On KWOK a Job's pod "completes" after a second; a real hello-world would run its command
  // and finish too. This annotation keeps the fake pods running until the MiniCluster is deleted.
  mc.spec.pod = {
    ...mc.spec.pod,
    annotations: { ...mc.spec.pod?.annotations, "kwok.x-k8s.io/keep-running": "true" },
  };
  return stringify(mc);
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

async function tail(file: string, lines = 30): Promise<string> {
  const text = await Deno.readTextFile(file).catch(() => "");
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}

/** Waits until the operator answers /readyz (caches synced), failing early if it exits. */
async function waitReady(pid: number, port: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (groupMembers(pid).length === 0) {
      throw new Error(`the operator exited:\n${await tail(OPERATOR_LOG)}`);
    }
    try {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`);
      await res.body?.cancel();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(
    `the operator was not ready after ${timeoutMs / 1000} s:\n${await tail(OPERATOR_LOG)}`,
  );
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { simulated: { type: "boolean" } } });
  const simulated = values.simulated ?? false;
  const t0 = performance.now();
  say(
    simulated
      ? "local cluster with KWOK nodes (the first run builds the Kubernetes binaries: minutes)"
      : "local cluster with a real node (the first run builds the Kubernetes binaries, Flux and " +
        "the images: about 25 minutes on 2 cores; later runs take seconds)",
  );
  const kubeconfig = await up({ dir: DIR, mode: "full", nodes: 4, realNodes: simulated ? 0 : 1 });

  say(`the operator's CRDs (${CRD_FILES.join(", ")})`);
  await installCrds(kubeconfig);

  const permissions = compilePermissions(await Deno.readTextFile(join(ROOT, "deno.json")));
  const port = freePort();
  // Confined to one namespace, the operator reads no Nodes (its `auto` would copy): the demo
  // reads them for it, so a cluster that can mounts the Flux view from its image.
  const view = await clusterFluxViewMount(kubeconfig);
  say(`the Flux view: --flux-view-mount=${view.mount} (${view.why})`);
  const args = [
    "run",
    ...permissions,
    join(ROOT, "mod.ts"),
    `--kubeconfig=${kubeconfig}`,
    // Only the demo's namespace: the tests reuse a running .cluster/, and an operator watching
    // every namespace would reconcile their MiniClusters too.
    `--namespaces=${NAMESPACE}`,
    `--flux-view-mount=${view.mount}`,
    "--log-format=text",
    `--health-port=${port}`,
    "--bind-address=127.0.0.1",
  ];
  say(`operator: deno ${args.join(" ")}`);
  // Recorded in .cluster/operator.pid: `./task cluster down` stops it; an earlier one is stopped.
  const pid = await startRecorded(DIR, "operator", {
    binary: Deno.execPath(),
    args,
    logFile: OPERATOR_LOG,
    cwd: ROOT,
  });
  await waitReady(pid, port);
  say(`operator ready (pid ${pid}, /readyz on 127.0.0.1:${port})`);

  const example = await Deno.readTextFile(EXAMPLE);
  // A finished run of an earlier demo would otherwise be what we wait for.
  await kubectl(kubeconfig, [
    "delete",
    `--namespace=${NAMESPACE}`,
    "minicluster/hello-world",
    "--ignore-not-found",
    "--wait=true",
  ]);
  say(
    simulated
      ? "examples/hello-world.yaml (pods kept running on KWOK)"
      : "examples/hello-world.yaml on the real node, with the local flux-app and flux-view images",
  );
  await kubectl(
    kubeconfig,
    ["apply", "--server-side", `--namespace=${NAMESPACE}`, "-f", "-"],
    simulated ? simulatedManifest(example) : realManifest(example),
  );
  const condition = simulated ? "Ready" : "Succeeded";
  say(`waiting for the ${condition} condition (up to ${READY_TIMEOUT})`);
  try {
    await kubectl(kubeconfig, [
      "wait",
      `--namespace=${NAMESPACE}`,
      `--for=condition=${condition}`,
      "minicluster/hello-world",
      `--timeout=${READY_TIMEOUT}`,
    ]);
  } catch (e) {
    console.error(
      await kubectl(kubeconfig, ["describe", `--namespace=${NAMESPACE}`, "mc/hello-world"]),
    );
    console.error(`--- operator log (${OPERATOR_LOG})\n${await tail(OPERATOR_LOG)}`);
    throw e;
  }

  console.log("$ kubectl get mc,job,pods,svc,cm,secret");
  console.log(
    await kubectl(kubeconfig, ["get", `--namespace=${NAMESPACE}`, "mc,job,pods,svc,cm,secret"]),
  );
  if (!simulated) {
    const log = await kubectl(kubeconfig, [
      "logs",
      `--namespace=${NAMESPACE}`,
      "-l",
      "job-name=hello-world,batch.kubernetes.io/job-completion-index=0",
      "--tail=-1",
    ]);
    console.log("What the lead broker (hello-world-0) reported:");
    console.log(reportedByLeadBroker(log));
    console.log("");
  }
  const rel = (p: string) => p.startsWith(`${ROOT}/`) ? p.slice(ROOT.length + 1) : p;
  const seconds = ((performance.now() - t0) / 1000).toFixed(0);
  console.log(`MiniCluster hello-world ${simulated ? "is Ready" : "Succeeded"} (${seconds} s).

The operator keeps running (pid ${pid}) and watches the namespace "${NAMESPACE}". Next:
  export KUBECONFIG=${rel(kubeconfig)}
  kubectl get mc -w                                  # watch the MiniClusters
  kubectl describe mc hello-world                    # conditions and events
  kubectl logs job/hello-world                       # the lead broker's whole log
  kubectl apply -f examples/                         # every example, simulated on KWOK (the queues of
                                                     # kueue.yaml need Kueue: cluster up --kueue)
  ${`tail -f ${rel(OPERATOR_LOG)}`.padEnd(50)} # the operator's log
  ./task cluster down                                # stop the operator and the cluster`);
  return 0;
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (e) {
    say(`failed: ${e instanceof Error ? e.message : e}`);
    Deno.exit(1);
  }
}
