/**
 * The custom metrics API's wiring (`--custom-metrics-port`): the front proxy's trust read from the
 * API server, the serving certificate from its Secret (made on first start), its CA published in
 * the APIService, and the HTTPS server answering from the MiniClusters' cache
 * (fluxqueue/custom_metrics.ts). The caBundle is checked again every minute, so that an APIService
 * applied again (or deleted and made again) is served without a restart.
 */
import type { MiniCluster } from "../../api/mod.ts";
import type { KubeClient } from "../../runtime/client/client.ts";
import { ConfigMaps } from "../../runtime/client/resources.ts";
import type { Store } from "../../runtime/cache/store.ts";
import type { Logger } from "../../runtime/core/log.ts";
import { systemClock, type TimerId } from "../../runtime/core/clock.ts";
import { Authorizer } from "../../runtime/aggregated/authorizer.ts";
import {
  AUTHENTICATION_CONFIGMAP,
  parseFrontProxyTrust,
} from "../../runtime/aggregated/front_proxy.ts";
import {
  ensureServingCert,
  publishCaBundle,
  serviceDnsNames,
} from "../../runtime/aggregated/serving_cert.ts";
import { startAggregatedServer } from "../../runtime/aggregated/server.ts";
import type { RunningServer } from "../../runtime/manager.ts";
import { CUSTOM_METRICS_API_SERVICE, customMetricsRoute } from "./fluxqueue/custom_metrics.ts";

/** How often the APIService's caBundle is checked. */
const REPUBLISH_MS = 60_000;

export interface CustomMetricsApiOptions {
  port: number;
  hostname?: string;
  /** The Service the APIService calls, in the operator's namespace. */
  service: string;
  miniClusters: Pick<Store<MiniCluster>, "get">;
  log: Logger;
}

export async function startCustomMetricsApi(
  client: KubeClient,
  opts: CustomMetricsApiOptions,
): Promise<RunningServer> {
  const namespace = client.namespace ?? "default";
  const auth = await client.get<{ data?: Record<string, string> }>(
    ConfigMaps,
    AUTHENTICATION_CONFIGMAP.namespace,
    AUTHENTICATION_CONFIGMAP.name,
  );
  const trust = parseFrontProxyTrust(auth.data);
  const tls = await ensureServingCert(
    client,
    namespace,
    `${opts.service}-tls`,
    serviceDnsNames(namespace, opts.service),
    { "app.kubernetes.io/name": "minicluster-operator" },
  );
  const publish = async () => {
    try {
      const done = await publishCaBundle(client, CUSTOM_METRICS_API_SERVICE, tls.caPem);
      if (done === "published") {
        opts.log.info("published the serving CA", { apiService: CUSTOM_METRICS_API_SERVICE });
      }
    } catch (e) {
      opts.log.error("could not publish the serving CA in the APIService", {
        apiService: CUSTOM_METRICS_API_SERVICE,
        error: String(e),
      });
    }
  };
  await publish();
  const server = await startAggregatedServer({
    port: opts.port,
    hostname: opts.hostname,
    tls,
    trust,
    authorizer: new Authorizer(client),
    route: (path) => customMetricsRoute(path, (ns, name) => opts.miniClusters.get(ns, name)),
    onError: (e) => opts.log.error("a custom metrics answer failed", { error: String(e) }),
  });
  opts.log.info("serving the custom metrics API", {
    apiService: CUSTOM_METRICS_API_SERVICE,
    port: server.port,
    service: `${namespace}/${opts.service}`,
  });
  // Armed once the server listens, and never again after shutdown (a check in flight then ends
  // without a next one).
  let timer: TimerId | undefined;
  let stopped = false;
  const again = () => {
    if (!stopped) timer = systemClock.setTimeout(() => publish().finally(again), REPUBLISH_MS);
  };
  again();
  return {
    shutdown: async () => {
      stopped = true;
      if (timer !== undefined) systemClock.clearTimeout(timer);
      await server.shutdown();
    },
  };
}
