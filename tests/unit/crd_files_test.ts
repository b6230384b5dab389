/**
 * The operator's CRDs come from one list (hack/crd_files.ts): every kind the operator defines names
 * its file there (ResourceType.definedIn, used in the start-up error when the kind is not served),
 * and that file's CustomResourceDefinition serves exactly that kind.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { MiniClusters } from "../../api/resource.ts";
import { MiniClusterWorkspaces } from "../../api/workspace.ts";
import { CRD_FILES } from "../../hack/crd_files.ts";
import { SOURCES } from "../../hack/install-manifest.ts";
import { OUR_CRD } from "../../hack/conformance/run.ts";
import { notServedMessage } from "../../runtime/watch/watcher.ts";
import { Jobs } from "../../runtime/client/resources.ts";

const ROOT = new URL("../../", import.meta.url);
const OPERATOR_KINDS = [MiniClusters, MiniClusterWorkspaces];

Deno.test("crd files: every kind the operator defines has its CRD file, and every file a kind", async () => {
  assert.deepEqual(
    OPERATOR_KINDS.map((rt) => rt.definedIn).sort(),
    [...CRD_FILES],
  );
  for (const rt of OPERATOR_KINDS) {
    const crd = parse(await Deno.readTextFile(new URL(rt.definedIn!, ROOT)));
    assert.equal(crd.kind, "CustomResourceDefinition");
    assert.equal(crd.spec.group, rt.group);
    assert.equal(crd.spec.names.plural, rt.plural);
    assert.equal(crd.spec.names.kind, rt.kind);
    assert.equal(crd.spec.scope, rt.namespaced ? "Namespaced" : "Cluster");
    assert.ok(
      crd.spec.versions.some((v: { name: string; served: boolean }) =>
        v.name === rt.version && v.served
      ),
      `${rt.definedIn} serves ${rt.version}`,
    );
  }
});

Deno.test("crd files: the install manifest and the conformance runs take every CRD file", () => {
  for (const file of CRD_FILES) {
    assert.ok(SOURCES.includes(file), `deploy/install.yaml includes ${file}`);
    assert.ok(OUR_CRD.some((p) => p.endsWith(`/${file}`)), `conformance applies ${file}`);
  }
});

Deno.test("crd files: a kind not served is answered with the file to apply", () => {
  assert.equal(
    notServedMessage(MiniClusterWorkspaces),
    "the API server does not serve miniclusterworkspaces.flux-framework.org/v1alpha2: its " +
      "CustomResourceDefinition is not installed; apply crds/miniclusterworkspace.yaml (every CRD " +
      "of the operator: kubectl apply --server-side -f crds/)",
  );
  assert.equal(notServedMessage(Jobs), "the API server does not serve jobs.batch/v1");
});
