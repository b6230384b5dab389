// Every flag of the operator (operator_flags.ts's table) is a value of the Helm chart, so that a
// release can set it: four under names of their own (hack/chart.ts), every other one under
// `flags.<flag in camelCase>`. --help is no setting. tests/integration/chart_test.ts renders the
// chart with each of them set and checks that the operator's container gets them.

import assert from "node:assert/strict";
import { parse } from "yaml";
import { flagValueName, NAMED_FLAG_VALUES } from "../../hack/chart.ts";
import { FLAGS } from "../../controllers/minicluster/operator_flags.ts";

const VALUES = new URL("../../charts/minicluster-operator/values.yaml", import.meta.url);

Deno.test("chart: values.yaml has a value for every operator flag", async () => {
  const values = parse(await Deno.readTextFile(VALUES));
  const missing = FLAGS.filter((f) => f.name !== "help").flatMap((f) => {
    const path = NAMED_FLAG_VALUES[f.name] ?? `flags.${flagValueName(f.name)}`;
    // deno-lint-ignore no-explicit-any -- a walk through parsed YAML
    const found = path.split(".").reduce((v: any, k) => v?.[k], values);
    return found === undefined ? [`--${f.name} (${path})`] : [];
  });
  assert.deepEqual(missing, [], "operator flags the chart cannot set");
});

Deno.test("chart: values.yaml's flags are all operator flags", async () => {
  const values = parse(await Deno.readTextFile(VALUES));
  const known = new Set(FLAGS.map((f) => flagValueName(f.name)));
  const unknown = Object.keys(values.flags ?? {}).filter((k) => !known.has(k));
  assert.deepEqual(unknown, []);
});
