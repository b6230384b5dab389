// deno task demo — the whole thing in one command, on a fresh machine:
//   local cluster (etcd, apiserver, controller manager, scheduler, KWOK nodes) → the MiniCluster CRD
//   → the operator (a background process, logs in .cluster/operator.log) → examples/hello-world.yaml
//   → wait until the MiniCluster is Ready → print what the operator made.
//
// The operator keeps running afterwards so you can play with it; `./task cluster down` stops it
// together with the cluster (it runs in its own session, recorded in .cluster/operator.pid, and
// `down` stops every process group recorded there). Running the demo again restarts the operator
// on the current code and reuses the cluster.

import { join, resolve } from "node:path";
import { parse, stringify } from "yaml";
import { startRecorded, up } from "./cluster/lifecycle.ts";
import { groupMembers } from "./cluster/processes.ts";
import { compilePermissions } from "./permissions.ts";

const ROOT = resolve(new URL("..", import.meta.url).pathname);
const DIR = join(ROOT, ".cluster");
const OPERATOR_LOG = join(DIR, "operator.log");
const EXAMPLE = join(ROOT, "examples", "hello-world.yaml");
const CRD = join(ROOT, "crds", "minicluster.yaml");
const READY_TIMEOUT = "180s";
/** The namespace the demo's operator watches and the example goes to. */
const NAMESPACE = "default";

const say = (msg: string) => console.error(`[demo] ${msg}`);

/** The example as the demo applies it: KWOK's pods stay Running, so Ready can be seen. */
export function demoManifest(exampleYaml: string): string {
  const mc = parse(exampleYaml);
  // On KWOK a Job's pod "completes" after a second; a real hello-world would run its command
  // and finish too. This annotation keeps the fake pods running until the MiniCluster is deleted.
  mc.spec.pod = {
    ...mc.spec.pod,
    annotations: { ...mc.spec.pod?.annotations, "kwok.x-k8s.io/keep-running": "true" },
  };
  return stringify(mc);
}

async function kubectl(kubeconfig: string, args: string[], stdin?: string): Promise<string> {
  const child = new Deno.Command("kubectl", {
    args: ["--kubeconfig", kubeconfig, ...args],
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  if (!out.success) throw new Error(`kubectl ${args.join(" ")}:\n${text(out.stderr)}`);
  return text(out.stdout);
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

async function main(): Promise<number> {
  const t0 = performance.now();
  say("local cluster (the first run builds the Kubernetes binaries: several minutes)");
  const kubeconfig = await up({ dir: DIR, mode: "full", nodes: 4 });

  say("MiniCluster CRD");
  await kubectl(kubeconfig, ["apply", "--server-side", "-f", CRD]);
  await kubectl(kubeconfig, [
    "wait",
    "--for=condition=Established",
    "crd/miniclusters.flux-framework.org",
    "--timeout=60s",
  ]);

  const permissions = compilePermissions(await Deno.readTextFile(join(ROOT, "deno.json")));
  const port = freePort();
  const args = [
    "run",
    ...permissions,
    join(ROOT, "mod.ts"),
    `--kubeconfig=${kubeconfig}`,
    // Only the demo's namespace: the tests reuse a running .cluster/, and an operator watching
    // every namespace would reconcile their MiniClusters too.
    `--namespaces=${NAMESPACE}`,
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

  say("examples/hello-world.yaml (pods kept running on KWOK)");
  await kubectl(
    kubeconfig,
    ["apply", "--server-side", `--namespace=${NAMESPACE}`, "-f", "-"],
    demoManifest(await Deno.readTextFile(EXAMPLE)),
  );
  say(`waiting for the Ready condition (up to ${READY_TIMEOUT})`);
  try {
    await kubectl(kubeconfig, [
      "wait",
      `--namespace=${NAMESPACE}`,
      "--for=condition=Ready",
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
  const rel = (p: string) => p.startsWith(`${ROOT}/`) ? p.slice(ROOT.length + 1) : p;
  console.log(`MiniCluster hello-world is Ready (${((performance.now() - t0) / 1000).toFixed(0)} s).

The operator keeps running (pid ${pid}) and watches the namespace "${NAMESPACE}". Next:
  export KUBECONFIG=${rel(kubeconfig)}
  kubectl get mc -w                                  # watch the MiniClusters
  kubectl describe mc hello-world                    # conditions and events
  kubectl scale mc hello-world --replicas 1          # scale it (size is the scale subresource)
  kubectl apply -f examples/                         # every example
  ${`tail -f ${rel(OPERATOR_LOG)}`.padEnd(50)} # the operator's log
  ./task cluster down                                # stop the operator and the cluster`);
  return 0;
}

if (import.meta.main) {
  try {
    Deno.exit(await main());
  } catch (e) {
    say(`failed: ${e instanceof Error ? e.message : e}`);
    Deno.exit(1);
  }
}
