// Pod Security restricted on the real nodes: in a namespace that enforces it, a MiniCluster whose
// pods meet it (a non-root user, no privilege escalation, no capabilities, the runtime's seccomp
// profile) runs Flux, with the view mounted from its image (an `image` volume is allowed by
// restricted) and with the view copied. The brokers run as that user: what `id` printed says so.

import assert from "node:assert/strict";
import type { MiniCluster } from "../../api/mod.ts";
import { FLUX_VIEW_IMAGE } from "../../hack/images/refs.ts";
import { eventually } from "../harness.ts";
import {
  kubectl,
  REAL_NAMESPACE,
  type RealEnv,
  realMiniCluster,
  realTest,
  recordedRuntime,
} from "./env.ts";

const ENFORCE = "pod-security.kubernetes.io/enforce";
const USER = 1000;

/** What restricted asks of every container. */
const TIGHT = { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } };

function restrictedMiniCluster(name: string, viewFrom: "ImageVolume" | "Copy"): MiniCluster {
  // Copied, the flux-view init container must meet restricted too; mounted, there is none.
  const view = viewFrom === "Copy" ? { securityContext: TIGHT } : {};
  const mc = realMiniCluster(name, {
    size: 2,
    flux: { container: { image: FLUX_VIEW_IMAGE, viewFrom, ...view } },
  }, { command: "id", securityContext: TIGHT });
  mc.spec.pod = {
    ...mc.spec.pod,
    securityContext: {
      runAsNonRoot: true,
      runAsUser: USER,
      runAsGroup: USER,
      seccompProfile: { type: "RuntimeDefault" },
    },
  };
  return mc;
}

async function succeededLeadLog(env: RealEnv, name: string): Promise<string> {
  await eventually(async () => {
    const mc = JSON.parse(
      await kubectl(["-n", REAL_NAMESPACE, "get", "minicluster", name, "-o", "json"]),
    ) as MiniCluster;
    const done = (mc.status?.conditions as { type: string; status: string }[] | undefined)
      ?.find((c) => c.type === "Succeeded");
    if (done?.status !== "True") throw new Error(`${name}: ${JSON.stringify(mc.status)}`);
  }, { timeoutMs: 180_000, intervalMs: 1000 });
  const lead = (await env.pods(name))[0];
  return await env.logs(lead.metadata!.name!, name);
}

realTest(
  "real: under Pod Security restricted, non-root brokers run Flux with the view mounted and copied",
  async (env) => {
    // The scenarios' namespace enforces restricted for this scenario only.
    await kubectl(["label", "namespace", REAL_NAMESPACE, `${ENFORCE}=restricted`, "--overwrite"]);
    try {
      const modes = recordedRuntime() === "debian"
        ? ["Copy"] as const
        : ["ImageVolume", "Copy"] as const;
      for (const viewFrom of modes) {
        const name = `restricted-${viewFrom.toLowerCase()}`;
        await env.apply(restrictedMiniCluster(name, viewFrom));
        const log = await succeededLeadLog(env, name);
        assert.match(log, new RegExp(`^uid=${USER}\\b.* gid=${USER}\\b`, "m"), log);
        assert.match(log, /Flux finished with exit code 0/, log);
      }
    } finally {
      await kubectl(["label", "namespace", REAL_NAMESPACE, `${ENFORCE}-`]).catch(() => {});
    }
  },
);
