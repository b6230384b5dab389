/**
 * The PromQL of deploy/monitoring/ (the alert rules in both forms and the Grafana dashboard), read
 * and parsed for tests/unit/monitoring_test.ts and tests/integration/monitoring_test.ts.
 *
 * Parsed with `@prometheus-io/lezer-promql`, the grammar of Prometheus' own web UI: a query it
 * marks with an error node (⚠) would be refused by Prometheus too, and its syntax tree names every
 * metric a query selects and the labels it matches on.
 */
import { parser } from "@prometheus-io/lezer-promql";
import { parse as parseYaml } from "yaml";

const ROOT = new URL("../", import.meta.url);

export const ALERT_RULES_FILE = "deploy/monitoring/alert-rules.yaml";
export const PROMETHEUS_RULE_FILE = "deploy/monitoring/prometheus-rule.yaml";
export const DASHBOARD_FILE = "deploy/monitoring/grafana-dashboard.json";

/**
 * Series a query may select that the operator does not serve: `up` is the one Prometheus records
 * for each scrape, the only way to see a replica that is down or not scraped at all.
 */
export const SCRAPE_SERIES: ReadonlySet<string> = new Set(["up"]);

/** Labels Prometheus adds to every scraped sample (the target's), not in /metrics. */
export const TARGET_LABELS: ReadonlySet<string> = new Set(["job", "instance"]);

export interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface RuleGroup {
  name: string;
  rules: Rule[];
}

/** One query of the files, named by where it is. */
export interface Query {
  where: string;
  expr: string;
}

/** The metric a query selects, with the label names it matches on. */
export interface Selector {
  metric: string;
  labels: string[];
}

export interface ParsedQuery {
  /** Offsets of the parse tree's error nodes; empty when the query parses. */
  errors: number[];
  selectors: Selector[];
}

function read(path: string): string {
  return Deno.readTextFileSync(new URL(path, ROOT));
}

/** The groups of the plain Prometheus rule file. */
export function alertRuleGroups(): RuleGroup[] {
  return (parseYaml(read(ALERT_RULES_FILE)) as { groups: RuleGroup[] }).groups;
}

/** The PrometheusRule object. */
export function prometheusRule(): {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec: { groups: RuleGroup[] };
} {
  return parseYaml(read(PROMETHEUS_RULE_FILE));
}

interface DashboardPanel {
  title?: string;
  targets?: { expr?: string }[];
  panels?: DashboardPanel[];
}

export interface Dashboard {
  templating?: { list?: { name: string; query?: string | { query?: string } }[] };
  panels: DashboardPanel[];
}

export function dashboard(): Dashboard {
  return JSON.parse(read(DASHBOARD_FILE));
}

/**
 * Grafana's variables as Prometheus would see them once Grafana substituted them: `$job` only
 * appears inside label values, `$__rate_interval` stands for a range.
 */
function substituteGrafanaVariables(expr: string): string {
  return expr.replaceAll("$__rate_interval", "5m").replaceAll("$__interval", "1m");
}

/** Every query of the rules (plain file) and of the dashboard's panels and variables. */
export function monitoringQueries(): Query[] {
  const out: Query[] = [];
  for (const group of alertRuleGroups()) {
    for (const rule of group.rules) {
      out.push({ where: `${ALERT_RULES_FILE} ${group.name}/${rule.alert}`, expr: rule.expr });
    }
  }
  const board = dashboard();
  const walk = (panels: DashboardPanel[]) => {
    for (const panel of panels) {
      for (const [i, target] of (panel.targets ?? []).entries()) {
        if (target.expr === undefined) continue;
        out.push({
          where: `${DASHBOARD_FILE} "${panel.title}" target ${i}`,
          expr: substituteGrafanaVariables(target.expr),
        });
      }
      walk(panel.panels ?? []);
    }
  };
  walk(board.panels);
  for (const variable of board.templating?.list ?? []) {
    const q = typeof variable.query === "string" ? variable.query : variable.query?.query;
    // label_values(metric, label) is Grafana's, not PromQL: its metric is a query of its own.
    const m = /^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$/.exec(q ?? "");
    if (m) out.push({ where: `${DASHBOARD_FILE} variable ${variable.name}`, expr: m[1] });
  }
  return out;
}

/** Parses `expr` as PromQL: its error nodes, and the metrics and label names it selects. */
export function parsePromQL(expr: string): ParsedQuery {
  const tree = parser.parse(expr);
  const errors: number[] = [];
  const selectors: Selector[] = [];
  const text = (from: number, to: number) => expr.slice(from, to);
  tree.iterate({
    enter(node) {
      if (node.type.isError) errors.push(node.from);
      if (node.name !== "VectorSelector") return;
      const selector: Selector = { metric: "", labels: [] };
      const cursor = node.node.cursor();
      if (cursor.firstChild()) {
        do {
          if (cursor.name === "Identifier") selector.metric = text(cursor.from, cursor.to);
          if (cursor.name === "LabelMatchers") {
            for (const matcher of cursor.node.getChildren("UnquotedLabelMatcher")) {
              const name = matcher.getChild("LabelName");
              if (name) selector.labels.push(text(name.from, name.to));
            }
          }
        } while (cursor.nextSibling());
      }
      selectors.push(selector);
    },
  });
  return { errors, selectors };
}

/** The families of /metrics by their `# TYPE` lines: name → counter, gauge or histogram. */
export function metricFamilies(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split("\n")) {
    const m = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)$/.exec(line);
    if (m) out.set(m[1], m[2]);
  }
  return out;
}

/** The family a selected series belongs to: itself, or the histogram of a _bucket/_sum/_count. */
export function familyOf(
  metric: string,
  families: ReadonlyMap<string, string>,
): string | undefined {
  if (families.has(metric)) return metric;
  const m = /^(.+)_(bucket|sum|count)$/.exec(metric);
  if (m && families.get(m[1]) === "histogram") return m[1];
  return undefined;
}
