/**
 * The install's admission policy against the inline CURVE certificate and the code that names its
 * opt-in agree: the binding leaves out exactly the namespaces labelled INLINE_CURVE_CERT_OPT_IN,
 * binds the policy of its file, denies, and the refusal names the opt-in and what to use instead.
 * What the policy does on a real API server: tests/integration/inline_curve_cert_policy_test.ts.
 */
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { INLINE_CURVE_CERT_OPT_IN } from "../../controllers/minicluster/policy/curve_source.ts";
import { FLAGS } from "../../controllers/minicluster/operator_flags.ts";

const SOURCE = new URL("../../deploy/inline-curve-cert-policy.yaml", import.meta.url);

// deno-lint-ignore no-explicit-any -- manifests are plain parsed YAML
type Obj = Record<string, any>;

const objects = (): Obj[] =>
  parseAllDocuments(Deno.readTextFileSync(SOURCE)).map((d) => d.toJS() as Obj).filter(Boolean);

Deno.test("inline curveCert policy: the binding selects out the opt-in label the code names", () => {
  const [policy, binding, ...rest] = objects();
  assert.equal(rest.length, 0);
  assert.equal(policy.kind, "ValidatingAdmissionPolicy");
  assert.equal(binding.kind, "ValidatingAdmissionPolicyBinding");
  assert.equal(binding.spec.policyName, policy.metadata.name);
  assert.deepEqual(binding.spec.validationActions, ["Deny"]);
  assert.deepEqual(binding.spec.matchResources.namespaceSelector, {
    matchExpressions: [{
      key: INLINE_CURVE_CERT_OPT_IN.label,
      operator: "NotIn",
      values: [INLINE_CURVE_CERT_OPT_IN.value],
    }],
  });
  const [validation] = policy.spec.validations;
  assert.match(validation.message, /spec\.flux\.curveCertSecretRef/);
  assert.ok(
    validation.message.includes(
      `${INLINE_CURVE_CERT_OPT_IN.label}=${INLINE_CURVE_CERT_OPT_IN.value}`,
    ),
    validation.message,
  );
});

Deno.test("inline curveCert policy: the operator's flag leaves the decision to it by default", () => {
  const flag = FLAGS.find((f) => f.name === "inline-curve-cert")!;
  assert.equal(flag.default, "allow");
  assert.ok(
    flag.help.includes(`${INLINE_CURVE_CERT_OPT_IN.label}=${INLINE_CURVE_CERT_OPT_IN.value}`),
    flag.help,
  );
});
