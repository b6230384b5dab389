/**
 * What the HTTP transport costs the operator's process, apart from the operator (issue 37's CPU
 * item). Each way of talking to the API server runs in a process of its own, whose CPU is read
 * from /proc:
 *
 * - `deno run -A bench/transport_cost.ts requests [--n=5000] [--reps=2]` — on a control plane of
 *   its own, N create-only applies of a 1 KiB ConfigMap, 8 at once (the operator's bound on writes
 *   in flight): through KubeClient on `fetch` and on HTTP/1.1 (its two transports), and through
 *   each transport alone (Deno's `fetch`; runtime/client/http1.ts).
 * - `deno run -A bench/transport_cost.ts watch --kubeconfig=K [--seconds=150]` — beside a bench run
 *   on the cluster of K (`deno task bench --peer --size=1 --n=1000 --only=ours`), the kinds the
 *   operator watches, watched in every namespace through KubeClient on each transport.
 */
import { parseArgs } from "node:util";
import { KubeClient } from "../runtime/client/client.ts";
import { tlsOptionsOf } from "../runtime/client/transport/choice.ts";
import { Http1Client } from "../runtime/client/transport/http1.ts";
import { type ClusterConnection, loadKubeconfig } from "../runtime/config/kubeconfig.ts";
import {
  ConfigMaps,
  Jobs,
  Pods,
  resourcePath,
  type ResourceType,
  Secrets,
  Services,
} from "../runtime/client/resources.ts";
import { MiniClusters } from "../api/resource.ts";
import { MiniClusterWorkspaces } from "../api/workspace.ts";
import { startPrivateCluster } from "../testing/private_cluster.ts";
import { readCpuSeconds } from "../testing/operator_process.ts";

const WORKERS = 8;
const WATCHED: ResourceType[] = [
  MiniClusters,
  MiniClusterWorkspaces,
  ConfigMaps,
  Secrets,
  Services,
  Jobs,
  Pods,
];
const APPLY = "application/apply-patch+yaml";
const REQUEST_WAYS = ["client-fetch", "client-http1", "fetch", "http1"] as const;
const WATCH_WAYS = ["client-fetch", "client-http1"] as const;

/** A 1 KiB ConfigMap's apply, as the operator writes a child (create-only apply). */
function configMapApply(run: string, i: number): { path: string; body: string } {
  const name = `cm-${run}-${i}`;
  return {
    path: `${
      resourcePath(ConfigMaps, { namespace: "default", name })
    }?fieldManager=bench&force=true`,
    body: JSON.stringify({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, namespace: "default", labels: { app: "transport-cost" } },
      data: { text: "x".repeat(1024) },
    }),
  };
}

/** KubeClient on the transport a `client-…` way names. */
function clientOf(way: string, conn: ClusterConnection): KubeClient {
  return new KubeClient(conn, { transport: way === "client-fetch" ? "fetch" : "http1" });
}

/** One apply through `way`, its answer parsed. */
function applier(way: string, conn: ClusterConnection): {
  apply: (path: string, body: string) => Promise<unknown>;
  close: () => void;
} {
  const headers: [string, string][] = [["Accept", "application/json"], ["Content-Type", APPLY]];
  if (way === "fetch") {
    const client = Deno.createHttpClient(tlsOptionsOf(conn) as Deno.CreateHttpClientOptions);
    return {
      apply: async (path, body) => {
        const response = await fetch(conn.server + path, {
          method: "PATCH",
          headers,
          body,
          client,
        });
        const text = await response.text();
        if (!response.ok) throw new Error(text);
        return JSON.parse(text);
      },
      close: () => client.close(),
    };
  }
  if (way === "http1") {
    const client = new Http1Client({ server: conn.server, tls: tlsOptionsOf(conn) });
    return {
      apply: async (path, body) => {
        const answer = await client.request({ method: "PATCH", path, headers, body });
        if (answer.status >= 300) throw new Error(answer.text);
        return JSON.parse(answer.text);
      },
      close: () => client.close(),
    };
  }
  const client = clientOf(way, conn);
  return {
    apply: (path, body) => client.request("PATCH", path, body, { contentType: APPLY }),
    close: () => client.close(),
  };
}

/** N applies by WORKERS workers through `way`; prints the process's CPU for them. */
async function requests(way: string, conn: ClusterConnection, n: number): Promise<void> {
  const { apply, close } = applier(way, conn);
  const run = `${way}-${Date.now()}`;
  let next = 0;
  const cpu0 = readCpuSeconds(Deno.pid);
  const t0 = performance.now();
  await Promise.all(Array.from({ length: WORKERS }, async () => {
    while (next < n) {
      const { path, body } = configMapApply(run, next++);
      await apply(path, body);
    }
  }));
  console.log(JSON.stringify({
    way,
    requests: n,
    cpuSeconds: +(readCpuSeconds(Deno.pid) - cpu0).toFixed(2),
    wallSeconds: +((performance.now() - t0) / 1000).toFixed(1),
  }));
  close();
}

/** Every kind of WATCHED watched for `seconds` through `way`; prints events and the CPU. */
async function watches(way: string, conn: ClusterConnection, seconds: number): Promise<void> {
  const client = clientOf(way, conn);
  const abort = new AbortController();
  let events = 0;
  for (const rt of WATCHED) {
    (async () => {
      while (!abort.signal.aborted) {
        try {
          for await (
            const _ of client.watch(rt, { dropManagedFields: true, signal: abort.signal })
          ) events++;
          return;
        } catch (e) {
          // Started before the bench's cluster serves the kind (its CRDs): tried again, with
          // nothing received meanwhile.
          console.error(`${way} ${rt.plural}: ${e}; again in 1 s`);
          await new Promise((r) => setTimeout(r, 1_000));
        }
      }
    })();
  }
  const cpu0 = readCpuSeconds(Deno.pid);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  console.log(JSON.stringify({
    way,
    events,
    cpuSeconds: +(readCpuSeconds(Deno.pid) - cpu0).toFixed(2),
  }));
  abort.abort();
  client.close();
}

/** Runs this file again as one way's process; its one line of JSON. */
async function child(args: string[]): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(import.meta.url).pathname, ...args],
    stdin: "null",
    stderr: "inherit",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  if (!out.success) throw new Error(`transport_cost ${args.join(" ")} failed: ${text}`);
  return text;
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    allowPositionals: true,
    options: {
      n: { type: "string", default: "5000" },
      reps: { type: "string", default: "2" },
      seconds: { type: "string", default: "150" },
      kubeconfig: { type: "string" },
      as: { type: "string" },
    },
  });
  const [what] = positionals;
  if (what !== "requests" && what !== "watch") {
    console.error(
      "usage: transport_cost.ts requests [--n=5000] [--reps=2] | " +
        "watch --kubeconfig=K [--seconds=150]",
    );
    Deno.exit(2);
  }
  if (values.as) {
    const conn = await loadKubeconfig(values.kubeconfig!);
    if (what === "requests") await requests(values.as, conn, Number(values.n));
    else await watches(values.as, conn, Number(values.seconds));
    Deno.exit(0);
  }
  if (what === "requests") {
    const kubeconfig = values.kubeconfig ?? await startPrivateCluster({
      prefix: "minicluster-transport-cost-",
      controlPlaneOnly: true,
    });
    for (let rep = 0; rep < Number(values.reps); rep++) {
      for (const way of REQUEST_WAYS) {
        console.log(
          await child([what, `--as=${way}`, `--kubeconfig=${kubeconfig}`, `--n=${values.n}`]),
        );
      }
    }
  } else {
    if (!values.kubeconfig) throw new Error("watch needs --kubeconfig (a cluster a bench runs on)");
    const lines = await Promise.all(
      WATCH_WAYS.map((way) =>
        child([
          what,
          `--as=${way}`,
          `--kubeconfig=${values.kubeconfig}`,
          `--seconds=${values.seconds}`,
        ])
      ),
    );
    for (const line of lines) console.log(line);
  }
  Deno.exit(0);
}
