// A name clash that goes away (issue 18, defect 10): a MiniCluster whose workspace name is held by
// someone else's MiniClusterWorkspace is WorkspaceInvalid, and once that is deleted it gets its
// children without a restart (the blocker is not in the operator's label-selected cache, so its
// deletion is no event the operator hears).
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { Jobs } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { MiniClusterWorkspaces } from "../../api/workspace.ts";
import { NAME_TAKEN_RECHECK_MS } from "../../runtime/controller/dependents.ts";
import { eventually, integrationTest } from "../harness.ts";
import { miniCluster, waitForCondition, withOperator } from "./minicluster_operator.ts";

integrationTest(
  "name clash: the MiniCluster recovers once the blocking workspace is gone",
  async (env) => {
    const { client, namespace } = env;
    await client.create(MiniClusterWorkspaces, {
      metadata: { name: "clash", namespace },
      spec: { maxSize: 1, size: 1 },
    });
    await withOperator(env, async () => {
      await client.create(MiniClusters, miniCluster("clash", namespace, { size: 2 }));
      await waitForCondition(env, "clash", "Unappliable", "True", "WorkspaceInvalid");
      await client.delete(MiniClusterWorkspaces, namespace, "clash");
      await eventually(() => client.get<Job>(Jobs, namespace, "clash"), {
        timeoutMs: NAME_TAKEN_RECHECK_MS + 10_000,
      });
      await waitForCondition(env, "clash", "Unappliable", "False");
    });
  },
);
