// Image volumes on the real nodes' container runtime (issue 38): a pod on each real node mounts
// the flux-view image read-only, `opt/views` and `opt/software` by `subPath` at the same paths, so
// the view's absolute links resolve, and runs Flux from it inside the flux-app image (which has no
// /opt). containerd 2 (the default runtime, ≥ 2.2 for `subPath`) shows the image's files. Debian's
// containerd 1.6.20 (`cluster up --containerd debian`) does not mount them empty: it never creates
// the container (CreateContainerError, `failed to mkdir ""`), which the pod's status says.
//
// Plain pods, no operator: what is asserted is the runtime, read from the pods' own output. Then,
// on containerd 1.6 only, what the operator makes of it: a MiniCluster with the view mounted is
// Ready False as FluxViewNotMounted, naming the cause and the copy, with a Warning Event. On
// containerd 2, an image that is no Flux view (the flux-app image: no opt/views) is refused by the
// runtime, which finds no `subPath` to mount (CreateContainerError, retried by the kubelet): the
// MiniCluster is Ready False as FluxViewNotMounted, naming the image and what a view image holds,
// with the runtime's words and a Warning Event.

import assert from "node:assert/strict";
import { stringify } from "yaml";
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import { REAL_NODE_LABEL, realNodeName } from "../../hack/cluster/real_node_config.ts";
import { FLUX_APP_IMAGE, FLUX_CORE_VERSION, FLUX_VIEW_IMAGE } from "../../hack/images/refs.ts";
import { eventually } from "../harness.ts";
import type { MiniCluster } from "../../api/mod.ts";
import {
  kubectl,
  REAL_NAMESPACE,
  realMiniCluster,
  realNodesAvailable,
  realTest,
  recordedRuntime,
} from "./env.ts";

/** What the pod prints: how many entries each mount shows, then Flux's version from the view. */
const SCRIPT = [
  'echo "views: $(ls -A /opt/views | wc -l)"',
  'echo "software: $(ls -A /opt/software | wc -l)"',
  "for flux in /opt/views/._view/*/bin/flux; do",
  '  [ -x "$flux" ] && "$flux" version',
  "done",
  "true",
].join("\n");

/** A plain object: kubernetes-types (1.30) predates the `image` volume source. */
function imageVolumePod(name: string, namespace: string, node: string): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace },
    spec: {
      nodeName: node,
      restartPolicy: "Never",
      tolerations: [{ key: REAL_NODE_LABEL, operator: "Exists", effect: "NoSchedule" }],
      containers: [{
        name: "reader",
        image: FLUX_APP_IMAGE,
        imagePullPolicy: "Never",
        command: ["/bin/sh", "-c", SCRIPT],
        volumeMounts: [
          { name: "flux", mountPath: "/opt/views", subPath: "opt/views", readOnly: true },
          { name: "flux", mountPath: "/opt/software", subPath: "opt/software", readOnly: true },
        ],
      }],
      volumes: [{ name: "flux", image: { reference: FLUX_VIEW_IMAGE, pullPolicy: "Never" } }],
    },
  };
}

Deno.test({
  name: "real: an image volume with subPath shows the image's files on every real node",
  ignore: !realNodesAvailable(),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const runtime = recordedRuntime();
    const namespace = `mc-image-volume-${Date.now().toString(36)}`;
    await kubectl(["create", "namespace", namespace]);
    try {
      const nodes = [realNodeName(0), realNodeName(1)];
      await kubectl(["apply", "-f", "-"], {
        stdin: nodes.map((node, i) => stringify(imageVolumePod(`reader-${i}`, namespace, node)))
          .join("---\n"),
      });
      for (let i = 0; i < nodes.length; i++) {
        const status = () =>
          kubectl(["-n", namespace, "get", "pod", `reader-${i}`, "-o", "json"])
            .then((out) => (JSON.parse(out) as Pod).status);
        if (runtime === "debian") {
          // containerd 1.6 knows no image mounts: it takes the volume for a bind mount of an empty
          // host path and never creates the container, with or without subPath.
          const waiting = await eventually(async () => {
            const s = await status();
            const w = s?.containerStatuses?.[0]?.state?.waiting;
            if (w?.reason !== "CreateContainerError") throw new Error(JSON.stringify(s));
            return w;
          }, { timeoutMs: 90_000, intervalMs: 500 });
          assert.match(waiting.message ?? "", /failed to mkdir "": mkdir : no such file/);
          continue;
        }
        const done = await eventually(async () => {
          const s = await status();
          if (s?.phase !== "Succeeded" && s?.phase !== "Failed") {
            throw new Error(`reader-${i}: ${JSON.stringify(s?.containerStatuses)}`);
          }
          return s;
        }, { timeoutMs: 90_000, intervalMs: 500 });
        const log = await kubectl(["-n", namespace, "logs", `reader-${i}`]);
        assert.equal(done.phase, "Succeeded", log);
        assert.doesNotMatch(log, /^(views|software): 0$/m, log);
        assert.match(log, new RegExp(FLUX_CORE_VERSION.replaceAll(".", "\\.")), log);
      }
      // The runtime each node reports is the one `up` was asked for.
      for (const node of nodes) {
        const reported = JSON.parse(await kubectl(["get", "node", node, "-o", "json"])) as Node;
        const version = reported.status?.nodeInfo?.containerRuntimeVersion ?? "";
        if (runtime === "debian") assert.match(version, /^containerd:\/\/1\./, node);
        else assert.match(version, /^containerd:\/\/2\.([2-9]|\d\d)\./, `${node}: ${version}`);
      }
    } finally {
      await kubectl(["delete", "namespace", namespace, "--wait=false"]).catch(() => {});
    }
  },
});

/**
 * Waits for MiniCluster `name`'s Ready condition to be False as FluxViewNotMounted, checks that it
 * came with Warning Events of that reason, and returns the condition's message.
 */
async function viewNotMounted(name: string): Promise<string> {
  const ready = await eventually(async () => {
    const mc = JSON.parse(
      await kubectl(["-n", REAL_NAMESPACE, "get", "minicluster", name, "-o", "json"]),
    ) as MiniCluster;
    const c = (mc.status?.conditions as { type: string; reason?: string; message?: string }[])
      ?.find((c) => c.type === "Ready");
    if (c?.reason !== "FluxViewNotMounted") throw new Error(JSON.stringify(mc.status));
    return c;
  }, { timeoutMs: 120_000, intervalMs: 1000 });
  // The Event goes out after the status write, so it may land just after the condition shows.
  await eventually(async () => {
    const events = JSON.parse(
      await kubectl([
        "-n",
        REAL_NAMESPACE,
        "get",
        "events",
        "--field-selector",
        `involvedObject.name=${name},reason=FluxViewNotMounted`,
        "-o",
        "json",
      ]),
    ).items as { type: string }[];
    assert.ok(
      events.length > 0 && events.every((e) => e.type === "Warning"),
      JSON.stringify(events),
    );
  }, { timeoutMs: 30_000, intervalMs: 1000 });
  return ready.message ?? "";
}

realTest(
  "real: on Debian's containerd 1.6 a MiniCluster with the view mounted reports FluxViewNotMounted",
  async (env) => {
    const name = "unmountable";
    await env.apply(realMiniCluster(name, {
      size: 2,
      flux: { container: { image: FLUX_VIEW_IMAGE, viewFrom: "ImageVolume" } },
    }));
    const message = await viewNotMounted(name);
    assert.match(message, /could not mount the Flux view image volume/);
    assert.match(message, /viewFrom: Copy .*--flux-view-mount=copy/);
    assert.match(message, /CreateContainerError .*failed to mkdir ""/);
  },
  { ignore: recordedRuntime() !== "debian" },
);

realTest(
  "real: on containerd 2 an image that is no Flux view, mounted, makes Ready FluxViewNotMounted",
  async (env) => {
    const name = "noview";
    // The flux-app image has no opt/views for the view's subPath.
    await env.apply(realMiniCluster(name, {
      size: 2,
      flux: { container: { image: FLUX_APP_IMAGE, viewFrom: "ImageVolume" } },
    }));
    const message = await viewNotMounted(name);
    assert.match(message, /has no opt\/views or opt\/software, so it is not a Flux view/);
    assert.match(message, /CreateContainerError .*failed to ensure image subpath/);
  },
  { ignore: recordedRuntime() === "debian" },
);
