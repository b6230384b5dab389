/**
 * broker.toml, the Flux broker configuration every pod reads: the bootstrap section (hosts in
 * rank order, how brokers bind and reach each other, the CURVE certificate), resources, the job
 * archive and the Fluxion queue policy. `flux.brokerConfig` replaces it verbatim.
 */
import type { Settings } from "./settings.ts";
import { BROKER_PORT } from "../names.ts";

/** A TOML basic string. JSON string escapes are a subset of TOML's, so JSON.stringify is exact. */
export const tomlString = (value: string): string => JSON.stringify(value);

/** Every broker binds on the pod's interface at its port (`%p`). */
export const DEFAULT_BIND = "tcp://eth0:%p";

/** Brokers reach each other by pod DNS name in the headless Service (`%h` is the host). */
export function defaultConnect(settings: Settings): string {
  return `tcp://%h.${settings.headlessName}.${settings.namespace}.svc.cluster.local:%p`;
}

/**
 * The `hosts` array. With a lead broker elsewhere, that broker gets its own entry with an explicit
 * bind/connect at its port, then the whole hostlist follows (Flux keeps the rank of a host's first
 * appearance). The Go operator meant to write the same but formats it with a missing argument.
 */
function hostsBlock(settings: Settings): string {
  const lead = settings.flux.leadBroker;
  if (!lead) return `hosts = [\n  { host = ${tomlString(settings.hostlist)} },\n]`;
  const leadEntry = [
    `host = ${tomlString(lead.address)}`,
    `bind = ${tomlString(`tcp://eth0:${lead.port}`)}`,
    `connect = ${tomlString(`tcp://${lead.address}:${lead.port}`)}`,
  ].join(", ");
  return `hosts = [\n  { ${leadEntry} },\n  { host = ${tomlString(settings.hostlist)} },\n]`;
}

export function brokerToml(settings: Settings): string {
  if (settings.flux.brokerConfig) return settings.flux.brokerConfig.replace(/\n$/, "");
  const config = `${settings.view.mountPath}/config`;
  return [
    "[access]",
    "allow-guest-user = true",
    "allow-root-owner = true",
    "",
    "# The resource set is written by flux R encode when a broker starts",
    "[resource]",
    `path = ${tomlString(`${config}/etc/flux/system/R`)}`,
    "",
    "[bootstrap]",
    `curve_cert = ${tomlString(`${config}/curve/curve.cert`)}`,
    `default_port = ${BROKER_PORT}`,
    `default_bind = ${tomlString(DEFAULT_BIND)}`,
    `default_connect = ${tomlString(defaultConnect(settings))}`,
    hostsBlock(settings),
    "",
    "[archive]",
    `dbpath = ${tomlString(`${config}/var/lib/flux/job-archive.sqlite`)}`,
    `period = "1m"`,
    `busytimeout = "50s"`,
    "",
    "[sched-fluxion-qmanager]",
    `queue-policy = ${tomlString(settings.flux.queuePolicy)}`,
  ].join("\n");
}
