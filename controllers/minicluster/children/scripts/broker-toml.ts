/**
 * broker.toml, the Flux broker configuration every pod reads: the bootstrap section (hosts in
 * rank order, how brokers bind and reach each other, the CURVE certificate), resources, the job
 * archive and the Fluxion queue policy. `flux.brokerConfig` replaces it verbatim.
 */
import type { Settings } from "./parts/settings.ts";
import { BROKER_PORT } from "../names.ts";
import { printableJson } from "../../../../runtime/client/wire/json_text.ts";

/**
 * A TOML basic string. JSON string escapes are a subset of TOML's, so JSON text is exact once the
 * characters TOML refuses raw (DEL) and other unprintables are `\uXXXX` escapes.
 */
export const tomlString = (value: string): string => printableJson(value);

/** Every broker binds on the pod's interface at its port (`%p`). */
const DEFAULT_BIND = "tcp://eth0:%p";

/** Brokers reach each other by pod DNS name in the headless Service (`%h` is the host). */
function defaultConnect(settings: Settings): string {
  return `tcp://%h.${settings.headlessName}.${settings.namespace}.svc.cluster.local:%p`;
}

/**
 * The hostlist after the lead broker's own entry: the lead broker is the first host of the
 * hostlist, and flux-core's bootstrap appends every `hosts` entry without removing duplicates, so
 * listing it twice would make this cluster's ranks one more than the lead cluster's (every rank
 * after 0 shifted, the brokers unable to agree). Empty when the lead broker is the only host.
 * A custom `bursting.hostlist` that does not start with the lead broker is kept whole.
 */
export function hostsAfterLead(hostlist: string, leadAddress: string): string {
  if (hostlist === leadAddress) return "";
  return hostlist.startsWith(`${leadAddress},`) ? hostlist.slice(leadAddress.length + 1) : hostlist;
}

/**
 * The `hosts` array. With a lead broker elsewhere, that broker gets its own entry with an explicit
 * bind/connect at its port, then the rest of the hostlist follows (hostsAfterLead). The Go
 * operator meant to write the same but formats it with a missing argument.
 */
function hostsBlock(settings: Settings): string {
  const lead = settings.flux.leadBroker;
  if (!lead) return `hosts = [\n  { host = ${tomlString(settings.hostlist)} },\n]`;
  const leadEntry = [
    `host = ${tomlString(lead.address)}`,
    `bind = ${tomlString(`tcp://eth0:${lead.port}`)}`,
    `connect = ${tomlString(`tcp://${lead.address}:${lead.port}`)}`,
  ].join(", ");
  const rest = hostsAfterLead(settings.hostlist, lead.address);
  const entries = [`  { ${leadEntry} },`, ...(rest ? [`  { host = ${tomlString(rest)} },`] : [])];
  return ["hosts = [", ...entries, "]"].join("\n");
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
