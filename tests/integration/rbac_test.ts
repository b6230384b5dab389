/**
 * The shipped RBAC is enough, and no more than the code needs: the operator's manager runs
 * in-process with a token of its own ServiceAccount (TokenRequest API), bound to the rules of
 * deploy/cluster-role.yaml and deploy/leader-election-role.yaml — never the admin certificate —
 * and reconciles a MiniCluster end to end without a single 403 (ganged where the API server serves
 * gangs, so its PodGroup is watched, written and deleted under the same rules). A variant role that
 * lacks one verb shows a forbidden write becomes a condition and an Event while the operator keeps
 * running.
 *
 * The ClusterRole is copied under a name unique to the test and bound with a RoleBinding in the
 * test's namespace, which is how an admin scopes the operator to namespaces (and keeps parallel
 * tests apart); the rules are the shipped file's, unchanged.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Lease } from "kubernetes-types/coordination/v1.d.ts";
import type { ConfigMap, Secret, Service } from "kubernetes-types/core/v1.d.ts";
import type { PolicyRule } from "kubernetes-types/rbac/v1.d.ts";
import { parseAllDocuments } from "yaml";
import type { Manager } from "../../mod.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import {
  ConfigMaps,
  Jobs,
  Leases,
  Secrets,
  ServiceAccounts,
  Services,
} from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { MiniClusterWorkspaces } from "../../api/workspace.ts";
import {
  curveSecretName,
  entrypointConfigMapName,
  headlessServiceName,
  jobName,
  podGroupName,
  workspaceName,
} from "../../controllers/minicluster/children/names.ts";
import type { PodGroup } from "../../controllers/minicluster/children/gang.ts";
import { PodGroups } from "../../controllers/minicluster/gang/pod_group.ts";
import { gangScheduling, servesGangs } from "../../testing/gang_cluster.ts";
import { eventually, fullCluster, integrationTest, type TestEnv } from "../harness.ts";
import {
  ClusterRoles,
  kubeconfigAs,
  RoleBindings,
  Roles,
  serviceAccountToken,
} from "./identity.ts";
import { runManager, type RunningManager } from "./in_process_manager.ts";
import { eventsFor, miniCluster, waitForCondition } from "./minicluster_operator.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const KEEP_RUNNING = { "kwok.x-k8s.io/keep-running": "true" };

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  rules?: PolicyRule[];
  roleRef?: { apiGroup: string; kind: string; name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
}

function manifests(file: string): Manifest[] {
  const text = Deno.readTextFileSync(`${ROOT}deploy/${file}`);
  return parseAllDocuments(text).map((d) => d.toJS()).filter(Boolean);
}

const shipped = {
  serviceAccount: manifests("service-account.yaml")[0],
  clusterRole: manifests("cluster-role.yaml")[0],
  leaderElection: manifests("leader-election-role.yaml"),
};

Deno.test("rbac: the shipped roles name every verb and resource, no wildcards", () => {
  const roles = [shipped.clusterRole, ...shipped.leaderElection.filter((m) => m.kind === "Role")];
  for (const role of roles) {
    for (const rule of role.rules ?? []) {
      for (const field of ["apiGroups", "resources", "verbs", "resourceNames"] as const) {
        assert.ok(!(rule[field] ?? []).includes("*"), `${role.metadata.name}: ${field} has *`);
      }
      assert.equal(rule.nonResourceURLs, undefined);
    }
  }
  const subjects = manifests("cluster-role-binding.yaml")[0].subjects;
  assert.deepEqual(subjects, [{
    kind: "ServiceAccount",
    name: shipped.serviceAccount.metadata.name,
    namespace: shipped.serviceAccount.metadata.namespace,
  }]);
});

/** The shipped rules without `verb` on `resource` (core group). */
function without(rules: readonly PolicyRule[], resource: string, verb: string): PolicyRule[] {
  return rules.flatMap((rule) => {
    if (!rule.resources?.includes(resource) || !rule.apiGroups?.includes("")) return [rule];
    const others = rule.resources.filter((r) => r !== resource);
    return [
      ...(others.length > 0 ? [{ ...rule, resources: others }] : []),
      { ...rule, resources: [resource], verbs: rule.verbs.filter((v) => v !== verb) },
    ];
  });
}

interface Identity {
  /** A kubeconfig holding only the ServiceAccount's bearer token. */
  kubeconfig: string;
  cleanup(): Promise<void>;
}

/**
 * The operator's ServiceAccount in the test namespace, bound to `rules` (a copy of the shipped
 * ClusterRole) and to the shipped leader-election Role, and a kubeconfig with a fresh token of it.
 */
async function operatorIdentity(env: TestEnv, rules: PolicyRule[]): Promise<Identity> {
  const { client, namespace } = env;
  const sa = shipped.serviceAccount.metadata.name;
  const clusterRoleName = `minicluster-operator-test-${namespace}`;
  await client.create(ServiceAccounts, {
    ...shipped.serviceAccount,
    metadata: { ...shipped.serviceAccount.metadata, namespace },
  });
  await client.create(ClusterRoles, {
    ...shipped.clusterRole,
    metadata: { ...shipped.clusterRole.metadata, name: clusterRoleName },
    rules,
  });
  const subjects = [{ kind: "ServiceAccount", name: sa, namespace }];
  await client.create(RoleBindings, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: "minicluster-operator", namespace },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: clusterRoleName },
    subjects,
  });
  for (const m of shipped.leaderElection) {
    const obj = { ...m, metadata: { ...m.metadata, namespace } };
    if (m.kind === "Role") await client.create(Roles, obj);
    else await client.create(RoleBindings, { ...obj, subjects });
  }

  const dir = await Deno.makeTempDir({ prefix: "minicluster-rbac-" });
  const kubeconfig = await kubeconfigAs(env, dir, { token: await serviceAccountToken(env, sa) });
  return {
    kubeconfig,
    async cleanup() {
      await Deno.remove(dir, { recursive: true });
      await client.delete(ClusterRoles, undefined, clusterRoleName).catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    },
  };
}

/** The operator's manager under `kubeconfig`, scoped to the test namespace, leader-electing. */
function runOperator(env: TestEnv, kubeconfig: string): Promise<RunningManager> {
  return runManager(kubeconfig, [
    `--namespaces=${env.namespace}`,
    "--leader-elect",
    "--leader-election-identity=rbac-test",
  ]);
}

/** Requests the API server refused with 403, from the manager's api_requests_total. */
function forbiddenRequests(manager: Manager): string[] {
  return manager.registry.render().split("\n").filter((l) =>
    l.startsWith("api_requests_total{") && l.includes('code="403"')
  );
}

integrationTest(
  "rbac: the operator reconciles a MiniCluster end to end under its own ServiceAccount",
  async (env) => {
    const { client, namespace } = env;
    const identity = await operatorIdentity(env, shipped.clusterRole.rules!);
    try {
      const op = await runOperator(env, identity.kubeconfig);
      try {
        // Leader election ran under the Role: the Lease names this replica.
        const lease = await eventually(async () => {
          const l = await client.get<Lease>(Leases, namespace, "minicluster-operator");
          assert.equal(l.spec?.holderIdentity, "rbac-test");
          return l;
        }, { timeoutMs: 20_000 });
        assert.ok(lease.spec?.renewTime);

        // Ganged where the API server serves it, so the PodGroup's row is covered too.
        const ganged = servesGangs(await gangScheduling(env.kubeconfig));
        const mc = miniCluster("rbac", namespace, {
          size: 2,
          pod: { annotations: KEEP_RUNNING },
          ...(ganged ? { gang: {} } : {}),
        });
        await client.create(MiniClusters, mc);
        // Every child, written by the ServiceAccount.
        await eventually(async () => {
          await client.get<Job>(Jobs, namespace, jobName(mc));
          await client.get<ConfigMap>(ConfigMaps, namespace, entrypointConfigMapName(mc));
          await client.get(MiniClusterWorkspaces, namespace, workspaceName(mc));
          await client.get<Secret>(Secrets, namespace, curveSecretName(mc));
          await client.get<Service>(Services, namespace, headlessServiceName(mc));
          if (ganged) await client.get<PodGroup>(PodGroups, namespace, podGroupName(mc));
        }, { timeoutMs: 20_000 });
        // Status written through the status subresource, nothing refused.
        await waitForCondition(env, "rbac", "Unappliable", "False", "Applied");
        await waitForCondition(env, "rbac", "SpecInvalid", "False");
        if (fullCluster()) await waitForCondition(env, "rbac", "Ready", "True", "PodsReady");
        // Events are written by the ServiceAccount too (a refused Event is only logged).
        if (fullCluster()) {
          await eventually(async () => {
            const events = await eventsFor(env, "rbac");
            assert.ok(events.some((e) => e.reason === "PodsReady"), "a PodsReady Event");
          }, { timeoutMs: 10_000 });
        }

        // Deletion (the finalizer's cleanup) works with the same rights.
        await client.delete(MiniClusters, namespace, "rbac");
        await eventually(async () => {
          try {
            await client.get(MiniClusters, namespace, "rbac");
            throw new Error("the MiniCluster still exists");
          } catch (e) {
            if (!isNotFound(e)) throw e;
          }
        }, { timeoutMs: 30_000, intervalMs: 200 });
        if (ganged) {
          // Deleted by cleanup (it may stay Terminating until no pod names it).
          const group = await client.get<PodGroup>(PodGroups, namespace, podGroupName(mc))
            .catch((e) => {
              if (isNotFound(e)) return undefined;
              throw e;
            });
          assert.ok(!group || group.metadata?.deletionTimestamp, "the PodGroup was deleted");
        }

        assert.deepEqual(forbiddenRequests(op.manager), [], op.logs.join("\n"));
        assert.ok(op.running(), "the operator still runs");
      } finally {
        assert.equal(await op.stop(), 0, "a clean shutdown");
      }
    } finally {
      await identity.cleanup();
    }
  },
  { timeoutMs: 90_000 },
);

integrationTest(
  "rbac: a forbidden write is reported in a condition and an Event, not crashed on",
  async (env) => {
    const { client, namespace } = env;
    // Secrets may be read and listed but not created: the CURVE certificate cannot be written.
    const identity = await operatorIdentity(
      env,
      without(shipped.clusterRole.rules!, "secrets", "create"),
    );
    try {
      const op = await runOperator(env, identity.kubeconfig);
      try {
        const mc = miniCluster("denied", namespace, { size: 1 });
        await client.create(MiniClusters, mc);
        const c = await waitForCondition(env, "denied", "Unappliable", "True", "ApiError")
          .catch((e) => {
            const requests = op.manager.registry.render().split("\n")
              .filter((l) => l.startsWith("api_requests_total{"));
            throw new Error(
              `${e.message}\nrequests:\n${requests.join("\n")}\noperator log:\n${
                op.logs.join("\n")
              }`,
            );
          });
        assert.match(c.message ?? "", new RegExp(`Secret ${curveSecretName(mc)}`));
        assert.match(c.message ?? "", /403 Forbidden/);
        await eventually(async () => {
          const events = await eventsFor(env, "denied");
          const warning = events.find((e) => e.reason === "ApiError");
          assert.equal(warning?.type, "Warning");
          assert.match(warning?.message ?? "", /forbidden/i);
        }, { timeoutMs: 10_000 });
        // Everything else it may write was still written, but the Job, whose pods would mount
        // the missing Secret, waits for it.
        await client.get<ConfigMap>(ConfigMaps, namespace, entrypointConfigMapName(mc));
        await assert.rejects(client.get<Job>(Jobs, namespace, jobName(mc)), isNotFound);
        assert.ok(forbiddenRequests(op.manager).some((l) => l.includes('resource="secrets"')));
        assert.ok(op.running(), "the operator still runs");
      } finally {
        assert.equal(await op.stop(), 0, "a clean shutdown");
      }
    } finally {
      await identity.cleanup();
    }
  },
  { timeoutMs: 60_000 },
);
