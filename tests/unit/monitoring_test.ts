// deploy/monitoring/: every query of the alert rules and the dashboard is PromQL that Prometheus'
// own grammar accepts, and the PrometheusRule holds the very rules of the plain rule file. That
// each metric is one the operator serves is checked against a running operator, in
// tests/integration/monitoring_test.ts.
import assert from "node:assert/strict";
import {
  ALERT_RULES_FILE,
  alertRuleGroups,
  dashboard,
  monitoringQueries,
  parsePromQL,
  PROMETHEUS_RULE_FILE,
  prometheusRule,
} from "../monitoring.ts";

Deno.test("monitoring: every rule and dashboard query parses as PromQL", () => {
  const queries = monitoringQueries();
  assert.ok(queries.length > 40, `only ${queries.length} queries found`);
  const bad = queries.flatMap(({ where, expr }) => {
    const { errors, selectors } = parsePromQL(expr);
    if (errors.length > 0) return [`${where}: error at offset ${errors[0]} of ${expr}`];
    if (selectors.length === 0) return [`${where}: selects no metric: ${expr}`];
    return [];
  });
  assert.deepEqual(bad, []);
});

Deno.test("monitoring: the parser refuses broken PromQL", () => {
  for (const broken of ["rate(x[5m]", "sum by (a) x", "x{a=}", "notafunction(x)", "x y"]) {
    assert.ok(parsePromQL(broken).errors.length > 0, `${broken} parsed`);
  }
  const { errors, selectors } = parsePromQL(
    'sum by (le) (rate(a_bucket{job="j",priority!="low"}[5m])) / on() b',
  );
  assert.deepEqual(errors, []);
  assert.deepEqual(selectors, [
    { metric: "a_bucket", labels: ["job", "priority"] },
    { metric: "b", labels: [] },
  ]);
});

Deno.test("monitoring: the PrometheusRule holds the rules of alert-rules.yaml", () => {
  const rule = prometheusRule();
  assert.equal(rule.apiVersion, "monitoring.coreos.com/v1");
  assert.equal(rule.kind, "PrometheusRule");
  assert.deepEqual(rule.spec.groups, alertRuleGroups(), `${PROMETHEUS_RULE_FILE} differs`);
});

Deno.test("monitoring: every alert is named once, waits or says why not, and has a severity", () => {
  const names = new Set<string>();
  for (const group of alertRuleGroups()) {
    for (const rule of group.rules) {
      assert.ok(!names.has(rule.alert), `${rule.alert} twice in ${ALERT_RULES_FILE}`);
      names.add(rule.alert);
      assert.match(rule.alert, /^MiniCluster[A-Za-z]+$/);
      assert.ok(
        ["critical", "warning", "info"].includes(rule.labels?.severity ?? ""),
        `${rule.alert}: severity ${rule.labels?.severity}`,
      );
      assert.ok(rule.annotations?.summary, `${rule.alert} has no summary`);
      assert.ok(rule.annotations?.description, `${rule.alert} has no description`);
      // An alert without `for` fires on one evaluation: only over a window of its own ([1h]).
      if (rule.for === undefined) assert.match(rule.expr, /\[1h\]/, `${rule.alert} has no for`);
      assert.match(
        rule.expr,
        /job="minicluster-operator-metrics"/,
        `${rule.alert} does not select the operator's job`,
      );
    }
  }
  assert.ok(names.size >= 10, `${names.size} alerts`);
});

Deno.test("monitoring: the dashboard's panels have unique ids and every target a query", () => {
  const board = dashboard() as unknown as {
    uid: string;
    panels: { id: number; type: string; title: string; targets?: { expr?: string }[] }[];
  };
  assert.equal(board.uid, "minicluster-operator");
  const ids = board.panels.map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length, "panel ids repeat");
  for (const panel of board.panels) {
    if (panel.type === "row") continue;
    assert.ok((panel.targets ?? []).length > 0, `${panel.title} has no target`);
    for (const t of panel.targets ?? []) assert.ok(t.expr, `${panel.title}: a target without expr`);
  }
});
