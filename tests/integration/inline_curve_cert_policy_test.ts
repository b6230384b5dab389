/**
 * The install's admission policy against the inline CURVE certificate (spec.flux.curveCert), on the
 * real kube-apiserver: the ValidatingAdmissionPolicy and its binding are applied exactly as
 * deploy/install.yaml has them, then
 *
 * - a MiniCluster with flux.curveCert is refused, with the message saying what to do instead, and
 *   nothing is stored;
 * - the same in a namespace labelled with the opt-in is accepted;
 * - one without it (or with an empty one, as the Go operator's Python SDK sends) is accepted in
 *   both;
 * - an update that adds the field, or changes its value, is refused; one that keeps the stored
 *   value (a MiniCluster stored before the policy or the label's removal) is accepted.
 *
 * The policy is cluster-wide: the test removes what it applied (a policy installed before it, by
 * tests/real's install for instance, is left in place).
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { generateCurveCertificate } from "../../controllers/minicluster/children/curve.ts";
import { INLINE_CURVE_CERT_OPT_IN } from "../../controllers/minicluster/policy/curve_source.ts";
import type { KubeClient } from "../../runtime/client/client.ts";
import { ApiError, isNotFound } from "../../runtime/client/errors.ts";
import { Namespaces, resourceType } from "../../runtime/client/resources.ts";
import { eventually, integrationTest } from "../harness.ts";

const INSTALL = fileURLToPath(new URL("../../deploy/install.yaml", import.meta.url));
const POLICIES = resourceType(
  "admissionregistration.k8s.io",
  "v1",
  "validatingadmissionpolicies",
  "ValidatingAdmissionPolicy",
  false,
);
const BINDINGS = resourceType(
  "admissionregistration.k8s.io",
  "v1",
  "validatingadmissionpolicybindings",
  "ValidatingAdmissionPolicyBinding",
  false,
);
const FIELD_MANAGER = "inline-curve-cert-policy-test";

// deno-lint-ignore no-explicit-any -- manifests are plain parsed YAML
type Obj = Record<string, any>;

/** The install manifest's admission objects of `kind`. */
function installed(kind: string): Obj[] {
  return parseAllDocuments(Deno.readTextFileSync(INSTALL))
    .map((d) => d.toJS() as Obj)
    .filter((o) => o?.kind === kind);
}

function miniCluster(namespace: string, name: string, curveCert?: string): MiniCluster {
  return {
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name, namespace },
    spec: {
      size: 2,
      containers: [{ image: "ubuntu:noble", command: "hostname" }],
      ...(curveCert === undefined ? {} : { flux: { curveCert } }),
    },
  };
}

/** The refusal of `write`, or a failure when it was accepted. */
async function refusal(write: () => Promise<unknown>, what: string): Promise<ApiError> {
  try {
    await write();
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error(`${what} was accepted`);
}

async function exists(client: KubeClient, rt: typeof POLICIES, name: string): Promise<boolean> {
  try {
    await client.get(rt, undefined, name);
    return true;
  } catch (e) {
    if (isNotFound(e)) return false;
    throw e;
  }
}

async function setOptIn(client: KubeClient, namespace: string, optedIn: boolean) {
  await client.patch(
    Namespaces,
    undefined,
    namespace,
    { metadata: { labels: { [INLINE_CURVE_CERT_OPT_IN.label]: optedIn ? "allow" : null } } },
    "merge",
  );
}

integrationTest(
  "inline curveCert: the install's admission policy refuses it, but in opted-in namespaces",
  async ({ client, namespace }) => {
    const policies = installed("ValidatingAdmissionPolicy");
    const bindings = installed("ValidatingAdmissionPolicyBinding");
    const applied: [typeof POLICIES, string][] = [];
    for (const [rt, objects] of [[POLICIES, policies], [BINDINGS, bindings]] as const) {
      for (const o of objects) {
        if (await exists(client, rt, o.metadata.name)) continue;
        await client.apply(rt, o, { fieldManager: FIELD_MANAGER });
        applied.push([rt, o.metadata.name]);
      }
    }
    const optedIn = `${namespace}-allow`.slice(0, 63);
    await client.create(Namespaces, {
      metadata: { name: optedIn, labels: { [INLINE_CURVE_CERT_OPT_IN.label]: "allow" } },
    });
    try {
      console.log(
        `install.yaml: ${policies.length} ValidatingAdmissionPolicy, ${bindings.length} binding`,
      );
      const cert = (await generateCurveCertificate()).text;
      const other = (await generateCurveCertificate()).text;
      const counts = { refused: 0, accepted: 0 };

      // The apiserver takes the new policy into use within a few seconds.
      const refused = await eventually(
        () =>
          refusal(
            () =>
              client.create(MiniClusters, miniCluster(namespace, "probe", cert), { dryRun: true }),
            "a MiniCluster with flux.curveCert in a namespace without the opt-in",
          ),
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      assert.equal(refused.code, 403, refused.message);

      // Created with the field: refused with what to do instead, and nothing stored.
      const created = await refusal(
        () => client.create(MiniClusters, miniCluster(namespace, "inline", cert)),
        "create with flux.curveCert",
      );
      counts.refused++;
      const message = created.status.message ?? "";
      assert.match(message, /spec\.flux\.curveCert puts the CURVE secret key in the MiniCluster/);
      assert.match(message, /spec\.flux\.curveCertSecretRef/);
      assert.match(message, /flux-framework\.org\/inline-curve-cert=allow/);
      await assert.rejects(client.get(MiniClusters, namespace, "inline"), isNotFound);

      // The same in the opted-in namespace: accepted and stored as written.
      await client.create(MiniClusters, miniCluster(optedIn, "inline", cert));
      counts.accepted++;
      const stored = await client.get<MiniCluster>(MiniClusters, optedIn, "inline");
      assert.equal(stored.spec.flux?.curveCert, cert);

      // Without the field, or with an empty one: accepted everywhere.
      for (const ns of [namespace, optedIn]) {
        await client.create(MiniClusters, miniCluster(ns, "generated"));
        await client.create(MiniClusters, miniCluster(ns, "empty", ""));
        counts.accepted += 2;
      }

      // An update adding the field: refused, by merge patch, server-side apply and PUT alike.
      const add = { spec: { flux: { curveCert: cert } } };
      await refusal(
        () => client.patch(MiniClusters, namespace, "generated", add, "merge"),
        "merge patch adding flux.curveCert",
      );
      await refusal(
        () =>
          client.apply(MiniClusters, miniCluster(namespace, "empty", cert), {
            fieldManager: FIELD_MANAGER,
            force: true,
          }),
        "server-side apply adding flux.curveCert",
      );
      const live = await client.get<MiniCluster>(MiniClusters, namespace, "generated");
      const put = await refusal(
        () =>
          client.replace(MiniClusters, {
            ...live,
            spec: { ...live.spec, flux: { ...live.spec.flux, curveCert: cert } },
          }),
        "PUT adding flux.curveCert",
      );
      counts.refused += 3;
      assert.match(put.status.message ?? "", /spec\.flux\.curveCertSecretRef/);
      const after = await client.get<MiniCluster>(MiniClusters, namespace, "generated");
      assert.equal(after.spec.flux?.curveCert, undefined);

      // The opt-in taken away: the stored MiniCluster can still be edited (and its finalizers
      // patched) while its certificate stays, but not be given another one.
      await setOptIn(client, optedIn, false);
      await eventually(
        () =>
          refusal(
            () =>
              client.create(MiniClusters, miniCluster(optedIn, "probe", cert), { dryRun: true }),
            "a create after the opt-in was removed",
          ),
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      await client.patch(
        MiniClusters,
        optedIn,
        "inline",
        {
          metadata: { labels: { team: "a" }, finalizers: ["example.com/keep"] },
          spec: { size: 3 },
        },
        "merge",
      );
      await client.patch(
        MiniClusters,
        optedIn,
        "inline",
        { metadata: { finalizers: null } },
        "merge",
      );
      counts.accepted += 2;
      await refusal(
        () =>
          client.patch(MiniClusters, optedIn, "inline", {
            spec: { flux: { curveCert: other } },
          }, "merge"),
        "merge patch changing flux.curveCert",
      );
      counts.refused++;
      const kept = await client.get<MiniCluster>(MiniClusters, optedIn, "inline");
      assert.equal(kept.spec.flux?.curveCert, cert);
      assert.equal(kept.spec.size, 3);
      console.log(
        `inline curveCert admission: ${counts.refused} writes refused, ${counts.accepted} accepted`,
      );
    } finally {
      await client.delete(Namespaces, undefined, optedIn).catch(() => {});
      for (const [rt, name] of applied.reverse()) {
        await client.delete(rt, undefined, name).catch((e) => {
          if (!isNotFound(e)) throw e;
        });
      }
    }
  },
  { timeoutMs: 120_000 },
);
