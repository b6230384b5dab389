/**
 * Generates the Helm chart charts/minicluster-operator/ from the same sources as
 * deploy/install.yaml (deploy/*.yaml and crds/), so that the two never drift apart:
 *
 *   deno run -A hack/chart.ts           rewrite the chart
 *   deno run -A hack/chart.ts --check   exit 1 when a file of the chart is stale (CI)
 *
 * Each source object is rendered as YAML with the parts users may change replaced by template
 * expressions over values.yaml, whose defaults are the sources' own values: `helm template` with
 * default values gives the objects of deploy/install.yaml (tests/integration/chart_test.ts checks
 * it), except the namespace, which Helm leaves to `--create-namespace` (README).
 */
import { Document, parseAllDocuments, type Scalar, stringify, type YAMLMap } from "yaml";
import denoJson from "../deno.json" with { type: "json" };
import { denoFmt, writeOrCheck } from "./generated_file.ts";
import { SOURCES } from "./install-manifest.ts";
import { FLAGS } from "../controllers/minicluster/operator_flags.ts";

const ROOT = new URL("../", import.meta.url);
export const CHART_DIR = "charts/minicluster-operator";
const NAME = "minicluster-operator";
const NAMESPACE = "minicluster-system";

// deno-lint-ignore no-explicit-any -- manifests are plain parsed YAML
type Obj = Record<string, any>;

/**
 * Operator flags set by values of their own name (through the environment; watchNamespaces also
 * makes the RoleBindings). Every other flag of the table (controllers/minicluster/operator_flags.ts) is the value
 * `flags.<flag in camelCase>`, so a new flag is a value as soon as it is in the table. --help is
 * no setting.
 */
export const NAMED_FLAG_VALUES: Readonly<Record<string, string>> = {
  "leader-elect": "leaderElection.enabled",
  "log-level": "logLevel",
  "log-format": "logFormat",
  namespaces: "watchNamespaces",
};
const NOT_SETTINGS = new Set(["help"]);

/** `lease-duration` → `leaseDuration`. */
export const flagValueName = (flag: string) =>
  flag.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** The flags that are `flags.*` values. */
const chartFlags = () =>
  FLAGS.filter((f) => !NOT_SETTINGS.has(f.name) && !(f.name in NAMED_FLAG_VALUES));

/** Marks a whole value to be replaced by a template expression when the YAML is written. */
const expr = (template: string) => `@@${template}@@`;
/** Marks a map or list to be replaced by `toYaml` of a value (a block, indented in place). */
const block = (valuePath: string) => `@@block ${valuePath}@@`;
/** The same, left out entirely when the value is empty (as the sources leave it out). */
const optionalBlock = (valuePath: string) => `@@optional ${valuePath}@@`;
/** Plain-scalar stand-ins inside names, replaced after the YAML is written. */
const RELEASE = "RELEASE--NAME";
const RELEASE_NAMESPACE = "RELEASE--NS";
/** `$`, the root context: also right inside `range` and `with`. */
const FULLNAME = `include "minicluster-operator.fullname" $`;

/** Replaces the markers in YAML text by Helm template expressions. */
function templateText(yaml: string): string {
  return yaml
    .replaceAll(RELEASE, `{{ ${FULLNAME} }}`)
    .replaceAll(RELEASE_NAMESPACE, "{{ $.Release.Namespace }}")
    .replace(
      /^( *)([\w.-]+): ['"]?@@optional ([\w.]+)@@['"]?$/gm,
      (_, indent: string, key: string, path: string) =>
        `${indent}{{- with .Values.${path} }}\n${indent}${key}:\n${indent}  {{- toYaml . | nindent ${
          indent.length + 2
        } }}\n${indent}{{- end }}`,
    )
    .replace(
      /^( *)(- )?([\w.-]+): ['"]?@@block ([\w.]+)@@['"]?$/gm,
      (_, indent: string, dash: string | undefined, key: string, path: string) => {
        const own = indent + (dash ? "  " : "");
        return `${indent}${dash ?? ""}${key}:\n${own}  {{- toYaml .Values.${path} | nindent ${
          own.length + 2
        } }}`;
      },
    )
    .replace(/['"]?@@(.+?)@@['"]?/g, (_, t: string) => `{{ ${t} }}`);
}

const namespace = RELEASE_NAMESPACE;

/** Names of the sources' objects follow the release's name (two releases never collide). */
function rename(name: string): string {
  if (name.startsWith(NAME)) return `${RELEASE}${name.slice(NAME.length)}`;
  // The aggregated roles (minicluster-view, -edit) too: <release>-view, <release>-edit.
  if (name.startsWith(AGGREGATED_PREFIX)) {
    return `${RELEASE}-${name.slice(AGGREGATED_PREFIX.length)}`;
  }
  return name;
}

/** The install manifest's aggregated user roles are named minicluster-<verb>. */
const AGGREGATED_PREFIX = "minicluster-";

/** A ClusterRole that Kubernetes aggregates into the built-in view/edit/admin roles. */
function isAggregated(obj: Obj): boolean {
  return obj.kind === "ClusterRole" &&
    Object.keys(obj.metadata.labels ?? {}).some((k) =>
      k.startsWith("rbac.authorization.k8s.io/aggregate-to-")
    );
}

/** A source object made a template: release name and namespace, values where users choose. */
function templated(obj: Obj): Obj {
  const out = structuredClone(obj);
  out.metadata.name = rename(out.metadata.name);
  if (out.metadata.namespace === NAMESPACE) out.metadata.namespace = namespace;
  for (const subject of out.subjects ?? []) {
    subject.name = rename(subject.name);
    if (subject.namespace === NAMESPACE) subject.namespace = namespace;
  }
  if (out.roleRef) out.roleRef.name = rename(out.roleRef.name);
  if (out.kind === "APIService") {
    out.spec.service.name = rename(out.spec.service.name);
    out.spec.service.namespace = namespace;
  }
  if (out.kind === "ValidatingAdmissionPolicyBinding") {
    out.spec.policyName = rename(out.spec.policyName);
  }
  for (const rule of out.rules ?? []) {
    if (rule.resourceNames) rule.resourceNames = rule.resourceNames.map(rename);
    // The Lease's name is the release's unless flags.leaderElectionId names another.
    if (out.kind === "Role" && rule.resources?.includes("leases") && rule.resourceNames) {
      rule.resourceNames = rule.resourceNames.map((n: string) =>
        n === RELEASE ? expr(`.Values.flags.leaderElectionId | default (${FULLNAME})`) : n
      );
    }
  }
  if (out.kind === "Deployment") {
    out.spec.replicas = expr(".Values.replicas");
    const pod = out.spec.template.spec;
    pod.serviceAccountName = rename(pod.serviceAccountName);
    pod.securityContext = block("podSecurityContext");
    pod.nodeSelector = optionalBlock("nodeSelector");
    pod.tolerations = optionalBlock("tolerations");
    pod.affinity = optionalBlock("affinity");
    pod.topologySpreadConstraints = optionalBlock("topologySpreadConstraints");
    const [c] = pod.containers;
    c.image = expr(
      `printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion)`,
    );
    c.imagePullPolicy = expr(".Values.image.pullPolicy");
    c.resources = block("resources");
    c.securityContext = block("securityContext");
    for (const e of c.env) {
      if (e.name === "OPERATOR_LEADER_ELECT") {
        e.value = expr(".Values.leaderElection.enabled | quote");
      }
      if (e.name === "OPERATOR_LOG_FORMAT") e.value = expr(".Values.logFormat | quote");
      if (e.name === "OPERATOR_LOG_LEVEL") e.value = expr(".Values.logLevel | quote");
    }
    c.env.push(expr("EXTRA_ENV"));
    for (const port of c.ports ?? []) {
      if (port.name === "health") {
        port.containerPort = expr(`.Values.flags.healthPort | default ${port.containerPort}`);
      }
    }
    c.args = expr("FLAG_ARGS");
  }
  return out;
}

/** Values whose defaults are what the sources say. */
export function values(deployment: Obj): Obj {
  const pod = deployment.spec.template.spec;
  const [c] = pod.containers;
  const env = (name: string) => c.env.find((e: Obj) => e.name === name)?.value;
  const [repository, tag] = c.image.split(":");
  return {
    image: { repository, tag: tag === denoJson.version ? "" : tag, pullPolicy: c.imagePullPolicy },
    replicas: deployment.spec.replicas,
    resources: c.resources,
    securityContext: c.securityContext,
    podSecurityContext: pod.securityContext,
    nodeSelector: pod.nodeSelector ?? {},
    tolerations: pod.tolerations ?? [],
    affinity: pod.affinity ?? {},
    topologySpreadConstraints: pod.topologySpreadConstraints ?? [],
    leaderElection: { enabled: env("OPERATOR_LEADER_ELECT") === "true" },
    watchNamespaces: [],
    aggregatedRoles: { enabled: true },
    inlineCurveCertPolicy: { enabled: true },
    logLevel: env("OPERATOR_LOG_LEVEL"),
    logFormat: env("OPERATOR_LOG_FORMAT"),
    flags: Object.fromEntries(
      chartFlags().map((f) => [flagValueName(f.name), f.kind === "list" ? [] : ""]),
    ),
    metrics: {
      service: { enabled: true },
      serviceMonitor: { enabled: false, interval: "30s", labels: {} },
    },
  };
}

/** values.yaml's text: each of `flags` under its --help line. */
function valuesText(vals: Obj): string {
  const doc = new Document(vals);
  const flags = doc.get("flags") as YAMLMap<Scalar<string>>;
  for (const item of flags.items) {
    const f = FLAGS.find((f) => flagValueName(f.name) === item.key.value)!;
    const dflt = f.default !== undefined && f.default !== "" ? ` (default ${f.default})` : "";
    item.key.commentBefore = ` --${f.name}: ${f.help}${dflt}`;
  }
  return doc.toString({ lineWidth: 0 });
}

const VALUES_HEADER =
  `# Values of the MiniCluster Operator chart. GENERATED by \`deno run -A hack/chart.ts\` from
# deploy/*.yaml: the defaults are deploy/install.yaml's.
#
# image.tag: empty means the chart's appVersion. watchNamespaces: empty means every namespace (a
# ClusterRoleBinding); otherwise the operator watches these (OPERATOR_NAMESPACES) and gets a
# RoleBinding to its ClusterRole in each. aggregatedRoles: <release>-view and <release>-edit,
# aggregated into the built-in view, edit and admin roles, so that those who may use a namespace
# may use its MiniClusters. inlineCurveCertPolicy: the ValidatingAdmissionPolicy refusing
# spec.flux.curveCert except in namespaces labelled flux-framework.org/inline-curve-cert=allow
# (README "Security"). metrics.serviceMonitor needs the Prometheus Operator's CRDs.
#
# flags: the operator's other flags (controllers/minicluster/operator_flags.ts; \`minicluster-operator --help\`), each
# given to the operator as --<flag>=<value> unless empty (the operator's default). healthPort is
# also the container's port, leaderElectionId the Lease the Role grants.
`;

const HELPERS =
  `{{/* GENERATED by hack/chart.ts. The release's name, unless it is the chart's own. */}}
{{- define "minicluster-operator.fullname" -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{/* "true" when a flag's value is set: not empty (nor an empty list), not null (false and 0 are set). */}}
{{- define "minicluster-operator.flagSet" -}}
{{- if not (or (kindIs "invalid" .) (eq (toString .) "") (and (kindIs "slice" .) (empty .))) }}true{{ end -}}
{{- end -}}
{{/* A flag's value as the operator parses it: whole numbers without an exponent, lists joined. */}}
{{- define "minicluster-operator.flagValue" -}}
{{- if and (kindIs "float64" .) (eq . (float64 (int64 .))) }}{{ int64 . }}
{{- else if kindIs "slice" . }}{{ join "," . }}
{{- else }}{{ toString . }}{{ end -}}
{{- end -}}
`;

/**
 * Environment entries only some releases need, so that the default one equals install.yaml: the
 * namespaces to watch, and the Lease's name when the release is not named like the operator (the
 * leader-election Role grants that name).
 */
function extraEnv(indent: string): string {
  return [
    `{{- with .Values.watchNamespaces }}`,
    `${indent}- name: OPERATOR_NAMESPACES`,
    `${indent}  value: {{ join "," . | quote }}`,
    `${indent}{{- end }}`,
    `${indent}{{- if ne (${FULLNAME}) "${NAME}" }}`,
    `${indent}- name: OPERATOR_LEADER_ELECTION_ID`,
    `${indent}  value: {{ ${FULLNAME} | quote }}`,
    `${indent}- name: OPERATOR_CUSTOM_METRICS_SERVICE`,
    `${indent}  value: {{ printf "%s-custom-metrics" (${FULLNAME}) | quote }}`,
    `${indent}{{- end }}`,
  ].join("\n");
}

/** The operator's args: one --<flag>=<value> per `flags` value set, none when none is. */
function flagArgs(indent: string): string {
  const lines = [`${indent}{{- $args := list }}`];
  for (const f of chartFlags()) {
    const v = `.Values.flags.${flagValueName(f.name)}`;
    lines.push(
      `${indent}{{- if include "minicluster-operator.flagSet" ${v} }}`,
      `${indent}{{- $args = append $args (printf "--${f.name}=%s" (include "minicluster-operator.flagValue" ${v})) }}`,
      `${indent}{{- end }}`,
    );
  }
  lines.push(
    `${indent}{{- with $args }}`,
    `${indent}args:`,
    `${indent}  {{- toYaml . | nindent ${indent.length + 2} }}`,
    `${indent}{{- end }}`,
  );
  return lines.join("\n");
}

/** A template file for one source object. */
function objectTemplate(path: string, obj: Obj): string {
  let text = templateText(stringify(templated(obj), { lineWidth: 0 }));
  text = text.replace(/^( *)- \{\{ EXTRA_ENV \}\}$/m, (_, i: string) => extraEnv(i));
  text = text.replace(/^( *)args: \{\{ FLAG_ARGS \}\}$/m, (_, i: string) => flagArgs(i));
  const header = `# GENERATED by hack/chart.ts from ${path}; do not edit.\n`;
  if (obj.kind === "ClusterRoleBinding") {
    // With watchNamespaces, one RoleBinding per namespace instead (the same ClusterRole).
    const roleBinding = templateText(stringify({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: RELEASE, namespace: expr("$ns"), labels: obj.metadata.labels },
      roleRef: templated(obj).roleRef,
      subjects: templated(obj).subjects,
    }, { lineWidth: 0 }));
    return `${header}{{- if not .Values.watchNamespaces }}\n${text}{{- else }}\n` +
      `{{- range $ns := .Values.watchNamespaces }}\n---\n${roleBinding}{{- end }}\n{{- end }}\n`;
  }
  if (
    obj.kind === "Service" && obj.metadata.labels?.["app.kubernetes.io/component"] === "metrics"
  ) {
    const monitor = templateText(stringify({
      apiVersion: "monitoring.coreos.com/v1",
      kind: "ServiceMonitor",
      metadata: { name: rename(obj.metadata.name), namespace, labels: { ...obj.metadata.labels } },
      spec: {
        selector: { matchLabels: { ...obj.metadata.labels } },
        endpoints: [{
          port: obj.spec.ports[0].name,
          path: "/metrics",
          interval: expr(".Values.metrics.serviceMonitor.interval"),
        }],
      },
    }, { lineWidth: 0 })).replace(
      /^( {2}labels:\n)/m,
      "$1    {{- with .Values.metrics.serviceMonitor.labels }}{{ toYaml . | nindent 4 }}{{ end }}\n",
    );
    return `${header}{{- if .Values.metrics.service.enabled }}\n${text}{{- end }}\n` +
      `{{- if .Values.metrics.serviceMonitor.enabled }}\n---\n${monitor}{{- end }}\n`;
  }
  if (isAggregated(obj)) {
    return `${header}{{- if .Values.aggregatedRoles.enabled }}\n${text}{{- end }}\n`;
  }
  // The policy against the inline CURVE certificate and its binding: on unless switched off.
  if (
    obj.kind.startsWith("ValidatingAdmissionPolicy") &&
    obj.metadata.name.endsWith("-inline-curve-cert")
  ) {
    return `${header}{{- if .Values.inlineCurveCertPolicy.enabled }}\n${text}{{- end }}\n`;
  }
  return header + text;
}

/** The opt-in custom metrics API (deploy/optional/custom-metrics.yaml), on with its port. */
export const CUSTOM_METRICS_SOURCE = "deploy/optional/custom-metrics.yaml";

async function customMetricsTemplate(): Promise<string> {
  const text = await Deno.readTextFile(new URL(CUSTOM_METRICS_SOURCE, ROOT));
  const objects = parseAllDocuments(text).map((d) => d.toJS() as Obj).filter((o) => o);
  // The Service is flags.customMetricsService when set, else named after the release (the
  // Deployment then tells the operator so: extraEnv); its Secret is named after it.
  const service =
    `.Values.flags.customMetricsService | default (printf "%s-custom-metrics" (${FULLNAME}))`;
  const body = objects.map((o) => {
    const t = templated(o);
    if (t.kind === "Service") {
      t.metadata.name = expr(service);
      t.spec.ports[0].targetPort = expr(".Values.flags.customMetricsPort");
    }
    if (t.kind === "APIService") t.spec.service.name = expr(service);
    for (const rule of t.kind === "Role" ? t.rules : []) {
      if (rule.resourceNames) rule.resourceNames = [expr(`printf "%s-tls" (${service})`)];
    }
    return templateText(stringify(t, { lineWidth: 0 }));
  }).join("---\n");
  const header = `# GENERATED by hack/chart.ts from ${CUSTOM_METRICS_SOURCE}; do not edit.\n`;
  return `${header}{{- if .Values.flags.customMetricsPort }}\n${body}{{- end }}\n`;
}

interface ChartFile {
  path: string;
  text: string;
}

async function chartFiles(): Promise<ChartFile[]> {
  const files: ChartFile[] = [];
  let deployment: Obj | undefined;
  for (const source of SOURCES) {
    const text = await Deno.readTextFile(new URL(source, ROOT));
    if (source.startsWith("crds/")) {
      files.push({ path: `crds/${source.slice("crds/".length)}`, text });
      continue;
    }
    const docs = parseAllDocuments(text).map((d) => d.toJS() as Obj).filter((o) => o);
    // The release namespace is Helm's (`helm install -n ... --create-namespace`).
    if (docs.every((o) => o.kind === "Namespace")) continue;
    const base = source.slice("deploy/".length);
    files.push({
      path: `templates/${base}`,
      text: docs.map((o) => objectTemplate(source, o)).join("---\n"),
    });
    deployment ??= docs.find((o) => o.kind === "Deployment");
  }
  if (!deployment) throw new Error("no Deployment among the sources");
  files.push({ path: "templates/custom-metrics.yaml", text: await customMetricsTemplate() });
  files.push({ path: "templates/_helpers.tpl", text: HELPERS });
  files.push({
    path: "values.yaml",
    text: await denoFmt(VALUES_HEADER + valuesText(values(deployment)), "yaml"),
  });
  files.push({
    path: "Chart.yaml",
    text: await denoFmt(
      `# GENERATED by hack/chart.ts; the versions are deno.json's.\n` + stringify({
        apiVersion: "v2",
        name: NAME,
        description: "The MiniCluster Operator: Flux Framework HPC clusters from MiniClusters " +
          "(flux-framework.org/v1alpha2)",
        type: "application",
        version: denoJson.version,
        appVersion: denoJson.version,
        keywords: ["flux-framework", "hpc", "operator", "minicluster"],
      }),
      "yaml",
    ),
  });
  return files;
}

async function main(args: string[]): Promise<number> {
  const check = args.includes("--check");
  let code = 0;
  const files = await chartFiles();
  const wanted = new Set(files.map((f) => `${CHART_DIR}/${f.path}`));
  for (const f of files) {
    await Deno.mkdir(new URL(`${CHART_DIR}/${f.path}/..`, ROOT), { recursive: true });
    code |= await writeOrCheck(`${CHART_DIR}/${f.path}`, f.text, {
      check,
      regenerate: "deno run -A hack/chart.ts",
    });
  }
  // A file left over from an earlier generation would still be part of the chart.
  for (const dir of ["", "templates/", "crds/"]) {
    for await (const e of Deno.readDir(new URL(`${CHART_DIR}/${dir}`, ROOT))) {
      const path = `${CHART_DIR}/${dir}${e.name}`;
      if (e.isFile && !wanted.has(path) && e.name !== "README.md" && e.name !== ".helmignore") {
        console.error(`${path} is not generated by hack/chart.ts: remove it`);
        code = 1;
      }
    }
  }
  return code;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
