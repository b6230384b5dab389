/**
 * API Priority and Fairness as the apiserver reports it: requests dispatched and time spent
 * queued, per FlowSchema and priority level, from its /metrics. The operators run as members of
 * group system:serviceaccounts (identity.ts), as an in-cluster operator's ServiceAccount is, so
 * they land where a deployed operator lands (FlowSchema service-accounts, priority level
 * workload-low), while the bench's own client, like a cluster admin's kubectl, is exempt.
 */
import { parse } from "yaml";
import { parseMetrics } from "../../testing/metrics_text.ts";

interface Kubeconfig {
  clusters: { cluster: { server: string; "certificate-authority-data": string } }[];
  users: { user: { "client-certificate-data": string; "client-key-data": string } }[];
}

/** `flowSchema/priorityLevel` → [requests dispatched, seconds waited in queues]. */
export type ApfCounts = Record<string, [number, number]>;

export class ApfReader {
  readonly #http: Deno.HttpClient;
  readonly #server: string;

  constructor(adminKubeconfigText: string) {
    const k = parse(adminKubeconfigText) as Kubeconfig;
    this.#server = k.clusters[0].cluster.server;
    this.#http = Deno.createHttpClient({
      caCerts: [atob(k.clusters[0].cluster["certificate-authority-data"])],
      cert: atob(k.users[0].user["client-certificate-data"]),
      key: atob(k.users[0].user["client-key-data"]),
    });
  }

  async read(): Promise<ApfCounts> {
    const r = await fetch(`${this.#server}/metrics`, { client: this.#http });
    const out: ApfCounts = {};
    for (const s of parseMetrics(await r.text())) {
      const key = `${s.labels.flow_schema}/${s.labels.priority_level}`;
      if (s.name === "apiserver_flowcontrol_dispatched_requests_total") {
        (out[key] ??= [0, 0])[0] += s.value;
      } else if (s.name === "apiserver_flowcontrol_request_wait_duration_seconds_sum") {
        (out[key] ??= [0, 0])[1] += s.value;
      }
    }
    return out;
  }

  close(): void {
    this.#http.close();
  }
}

/** b − a, keeping what changed. Pure. */
export function apfDelta(a: ApfCounts, b: ApfCounts): ApfCounts {
  const out: ApfCounts = {};
  for (const [k, [n, w]] of Object.entries(b)) {
    const [n0, w0] = a[k] ?? [0, 0];
    if (n - n0 > 0) out[k] = [n - n0, Math.round((w - w0) * 1000) / 1000];
  }
  return out;
}
