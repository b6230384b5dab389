// The Flux view from an image volume (docs/flux-view.md): how the pods are built in each mode, how
// the mode is chosen and kept, the entrypoint's check of an empty view, and the condition it
// becomes.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Node, Pod, Volume } from "kubernetes-types/core/v1.d.ts";
import type { MiniClusterSpec } from "../../api/mod.ts";
import { buildJob, fluxViewOf } from "../../controllers/minicluster/children/job.ts";
import { buildEntrypointConfigMap } from "../../controllers/minicluster/children/entrypoint.ts";
import type { FluxView, Sizing } from "../../controllers/minicluster/children/sizing.ts";
import {
  FLUX_VIEW_EMPTY_EXIT_CODE,
  fluxViewEmptyMessage,
  MOUNTED_VIEWS,
  TERMINATION_LOG,
} from "../../controllers/minicluster/children/scripts/view-environment.ts";
import {
  clusterMountsViewImage,
  FluxViewChooser,
  type NodeRuntime,
} from "../../controllers/minicluster/workspace/flux_view_choice.ts";
import { NodeRuntimes } from "../../controllers/minicluster/workspace/node_runtimes.ts";
import {
  computeStatus,
  FLUX_VIEW_EMPTY,
  FLUX_VIEW_NOT_MOUNTED,
  fluxViewNotMountedMessage,
} from "../../controllers/minicluster/status/status.ts";
import { conditionEvents } from "../../controllers/minicluster/status/events.ts";
import { podSecurityViolations } from "../../controllers/minicluster/policy/pod_security.ts";
import { MiniClusterWorkspaces } from "../../api/workspace.ts";
import { MiniClusters } from "../../api/resource.ts";
import { Events, Jobs, Nodes, Pods } from "../../runtime/client/resources.ts";
import { FakeApiClient } from "../../testing/fake_api.ts";
import { ApiError } from "../../runtime/client/errors.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";
import { run, scriptProblems } from "../generated/script_checks.ts";
import { defaultedMiniCluster } from "./fixtures.ts";
import { TIMING } from "../../controllers/minicluster/timing.ts";

const APP = "ghcr.io/rse-ops/lammps:flux-sched-focal";
const sized = (fluxView: FluxView): Sizing => ({ effectiveSize: 2, maximumSize: 2, fluxView });
const mcOf = (spec: Partial<MiniClusterSpec> = {}) =>
  defaultedMiniCluster({ size: 2, containers: [{ image: APP, command: "lmp" }], ...spec });
const volume = (job: Job, name: string): Volume | undefined =>
  job.spec?.template.spec?.volumes?.find((v) => v.name === name);

Deno.test("flux view: mounted, the pods get the view image read-only at its own paths and no init container", () => {
  const mc = mcOf({
    containers: [
      { image: APP, runFlux: true, command: "lmp" },
      { name: "sidecar", image: "ubuntu:noble", command: "sleep infinity" },
    ],
  });
  const job = buildJob(mc, sized("ImageVolume"));
  const pod = job.spec!.template.spec!;
  assert.equal(pod.initContainers, undefined, "nothing copies the view");
  assert.deepEqual(volume(job, "flux-view-image"), {
    name: "flux-view-image",
    image: {
      reference: "ghcr.io/converged-computing/flux-view-ubuntu:tag-noble",
      pullPolicy: "IfNotPresent",
    },
  });
  assert.equal(volume(job, "spack-software"), undefined, "no software copy");
  assert.deepEqual(volume(job, "flux-view"), { name: "flux-view", emptyDir: {} }, "config volume");
  for (const c of pod.containers) {
    const mounts = c.volumeMounts!.filter((m) => m.name === "flux-view-image");
    assert.deepEqual(mounts, [
      { name: "flux-view-image", mountPath: "/opt/views", subPath: "opt/views", readOnly: true },
      {
        name: "flux-view-image",
        mountPath: "/opt/software",
        subPath: "opt/software",
        readOnly: true,
      },
    ], `${c.name}: the two directories`);
    assert.ok(c.volumeMounts!.some((m) => m.name === "flux-view" && m.mountPath === "/mnt/flux"));
  }
  // The Job fails at once when a container finds the view empty.
  assert.deepEqual(job.spec?.podFailurePolicy?.rules.at(-1), {
    action: "FailJob",
    onExitCodes: { operator: "In", values: [FLUX_VIEW_EMPTY_EXIT_CODE] },
  });
  assert.equal(fluxViewOf(job), "ImageVolume");

  const data = buildEntrypointConfigMap(mc, sized("ImageVolume")).data!;
  assert.deepEqual(Object.keys(data).sort(), ["start-1", "wait-0"], "no init script");
  const projected = volume(job, "flux-sample-entrypoint")!.projected!.sources![0].configMap!;
  assert.deepEqual(projected.items!.map((i) => i.key).sort(), ["start-1", "wait-0"]);
  // The Flux container writes the configuration and marks it ready; the sidecar waits for it.
  assert.match(data["wait-0"], /hosts='?flux-sample-\[0-1\]'?\n/);
  assert.match(data["wait-0"], /broker\.toml/);
  assert.match(data["wait-0"], /touch "\$\{viewbase\}\/flux-operator-done\.txt"/);
  assert.doesNotMatch(data["wait-0"], /cp -R "\$\{viewbase\}\/software"/, "nothing copied");
  assert.doesNotMatch(data["start-1"], /broker\.toml/);
  assert.match(data["start-1"], /until \[ -e "\$\{viewbase\}\/flux-operator-done\.txt" \]/);
});

Deno.test("flux view: copied, the pods are as before (init container, software copy)", () => {
  const mc = mcOf();
  for (const sizing of [sized("Copy"), { effectiveSize: 2, maximumSize: 2 }]) {
    const job = buildJob(mc, sizing);
    const pod = job.spec!.template.spec!;
    assert.deepEqual(pod.initContainers!.map((c) => c.name), ["flux-view"]);
    assert.deepEqual(volume(job, "spack-software"), { name: "spack-software", emptyDir: {} });
    assert.equal(volume(job, "flux-view-image"), undefined);
    assert.equal(fluxViewOf(job), "Copy");
    assert.ok("flux-view" in buildEntrypointConfigMap(mc, sizing).data!, "the init script");
    assert.equal(
      job.spec?.podFailurePolicy?.rules.some((r) =>
        r.onExitCodes?.values.includes(FLUX_VIEW_EMPTY_EXIT_CODE)
      ),
      false,
    );
  }
});

Deno.test("flux view: with Flux in the application image (disable) no view image is mounted", () => {
  const mc = mcOf({ flux: { container: { disable: true } } });
  const job = buildJob(mc, sized("ImageVolume"));
  assert.deepEqual(job.spec!.template.spec!.initContainers!.map((c) => c.name), ["flux-view"]);
  assert.equal(volume(job, "flux-view-image"), undefined);
  const wait = buildEntrypointConfigMap(mc, sized("ImageVolume")).data!["wait-0"];
  assert.doesNotMatch(wait, new RegExp(MOUNTED_VIEWS), "no check of a view that is not there");
});

Deno.test("flux view: a custom view image is the volume's reference, pulled as the view container was", () => {
  const image = "registry.example/flux-view-rocky:tag-9";
  const job = buildJob(
    mcOf({ flux: { container: { image, pullAlways: true } } }),
    sized("ImageVolume"),
  );
  assert.deepEqual((volume(job, "flux-view-image") as { image?: unknown })?.image, {
    reference: image,
    pullPolicy: "Always",
  });
});

Deno.test("flux view: the image volume is allowed at baseline and restricted (Pod Security 1.37)", () => {
  const tight = {
    securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
  };
  const mc = mcOf({
    containers: [{ image: APP, command: "lmp", ...tight }],
    flux: { container: tight },
    pod: { securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } } },
  });
  const spec = buildJob(mc, sized("ImageVolume")).spec!.template.spec!;
  assert.ok(spec.volumes!.some((v) => v.name === "flux-view-image"));
  assert.deepEqual(podSecurityViolations({ spec }, "baseline", "pods"), []);
  assert.deepEqual(podSecurityViolations({ spec }, "restricted", "pods"), []);
});

const node = (name: string, runtime: string, kubelet = "v1.37.0"): NodeRuntime => ({
  name,
  containerRuntimeVersion: runtime,
  kubeletVersion: kubelet,
});

Deno.test("flux view: Auto mounts the view only where every node that runs containers can", () => {
  const table: [string, NodeRuntime[], boolean][] = [
    ["containerd 2.2", [node("a", "containerd://2.2.0")], true],
    ["containerd 2.4.2 and CRI-O 1.33", [
      node("a", "containerd://v2.4.2"),
      node("b", "cri-o://1.33.0"),
    ], true],
    ["containerd 2.1 (no subPath)", [node("a", "containerd://2.1.9")], false],
    ["Debian's containerd 1.6.20", [node("a", "containerd://1.6.20")], false],
    ["CRI-O 1.32", [node("a", "cri-o://1.32.4")], false],
    ["one node of two too old", [
      node("a", "containerd://2.2.1"),
      node("b", "containerd://1.7.27"),
    ], false],
    ["kubelet 1.34 (gate off by default)", [node("a", "containerd://2.2.0", "v1.34.2")], false],
    ["docker through cri-dockerd", [node("a", "docker://28.0.1")], false],
    ["a node that has not reported", [node("a", "", "")], false],
    ["KWOK's fake nodes only", [node("k", "kwok-v0.7.0")], false],
    ["KWOK's nodes do not count", [
      node("k", "kwok-v0.7.0", "fake"),
      node("a", "containerd://2.2.0"),
    ], true],
    ["no nodes", [], false],
  ];
  for (const [what, nodes, mounts] of table) {
    assert.equal(clusterMountsViewImage(nodes).mounts, mounts, what);
  }
  assert.match(
    clusterMountsViewImage([node("b", "containerd://1.6.20")]).why,
    /node b runs containerd:\/\/1\.6\.20 \(image volumes with subPath need containerd 2\.2/,
  );
});

Deno.test("flux view: the spec's viewFrom wins, then --flux-view-mount; only auto reads the nodes", async () => {
  let reads = 0;
  const source = (nodes: NodeRuntime[]) => ({
    nodes: () => {
      reads++;
      return Promise.resolve(nodes);
    },
  });
  const able = source([node("a", "containerd://2.2.0")]);
  const old = source([node("a", "containerd://1.6.20")]);
  const view = (viewFrom: "Auto" | "ImageVolume" | "Copy") =>
    mcOf({ flux: { container: { viewFrom } } });
  const cases: [string, FluxView, () => Promise<FluxView>][] = [
    [
      "ImageVolume asked",
      "ImageVolume",
      () => new FluxViewChooser("copy", old).choose(view("ImageVolume")),
    ],
    ["Copy asked", "Copy", () => new FluxViewChooser("image-volume", able).choose(view("Copy"))],
    [
      "Auto, admin says image-volume",
      "ImageVolume",
      () => new FluxViewChooser("image-volume", old).choose(view("Auto")),
    ],
    ["Auto, admin says copy", "Copy", () => new FluxViewChooser("copy", able).choose(view("Auto"))],
  ];
  for (const [what, want, choose] of cases) assert.equal(await choose(), want, what);
  assert.equal(reads, 0, "no node read without auto");
  assert.equal(await new FluxViewChooser("auto", able).choose(view("Auto")), "ImageVolume");
  assert.equal(await new FluxViewChooser("auto", old).choose(mcOf()), "Copy", "Auto by default");
  assert.equal(reads, 2);
});

Deno.test("flux view: the nodes are listed at most once a minute, one list for callers at once", async () => {
  const api = new FakeApiClient();
  api.seed<Node>(Nodes, {
    metadata: { name: "real-1" },
    status: {
      nodeInfo: {
        containerRuntimeVersion: "containerd://2.2.0",
        kubeletVersion: "v1.37.0",
      } as NonNullable<Node["status"]>["nodeInfo"],
    },
  });
  let now = 0;
  const runtimes = new NodeRuntimes(api, () => now);
  const lists = () => api.requests.filter((r) => r.verb === "list").length;
  const [a, b] = await Promise.all([runtimes.nodes(), runtimes.nodes()]);
  assert.deepEqual(a, [node("real-1", "containerd://2.2.0")]);
  assert.equal(a, b);
  assert.equal(lists(), 1, "callers at once share a list");
  now = 59_000;
  await runtimes.nodes();
  assert.equal(lists(), 1, "kept for a minute");
  now = 60_000;
  await runtimes.nodes();
  assert.equal(lists(), 2, "listed again after a minute");
});

/** Nodes in the fake API server: `runtime` on each. */
async function nodesRunning(op: FakeOperator, runtime: string): Promise<void> {
  for (const n of op.api.objects<Node>(Nodes)) {
    await op.api.delete(Nodes, undefined, n.metadata!.name!);
  }
  op.api.seed<Node>(Nodes, {
    metadata: { name: `node-${runtime.replace(/\W/g, "-")}` },
    status: {
      nodeInfo: { containerRuntimeVersion: runtime, kubeletVersion: "v1.37.0" },
    } as Node["status"],
  });
}

Deno.test("flux view: decided once when the Job is first built, kept in the workspace, shown in the status", async () => {
  const op = new FakeOperator();
  await nodesRunning(op, "containerd://2.2.0");
  await op.create("flux", { size: 2, maxSize: 4 });
  await op.converge("flux");
  const ws = op.api.peek<{ spec: { fluxView?: string } }>(MiniClusterWorkspaces, NS, "flux");
  assert.equal(ws?.spec.fluxView, "ImageVolume");
  const job = op.api.peek<Job>(Jobs, NS, "flux")!;
  assert.equal(fluxViewOf(job), "ImageVolume");
  assert.equal(op.miniCluster("flux")?.status?.fluxView, "ImageVolume");

  // The nodes change; the running Job's pods keep the mode their template has, scaled or not.
  op.time += 120_000;
  await nodesRunning(op, "containerd://1.6.20");
  const mc = op.miniCluster("flux")!;
  await op.api.patch(MiniClusters, NS, "flux", { spec: { ...mc.spec, size: 3 } }, "merge");
  op.sync();
  await op.converge("flux");
  const scaled = op.api.peek<Job>(Jobs, NS, "flux")!;
  assert.equal(scaled.spec?.parallelism, 3);
  assert.equal(fluxViewOf(scaled), "ImageVolume", "never re-decided for a running Job");
  assert.equal(
    op.api.peek<{ spec: { fluxView?: string } }>(MiniClusterWorkspaces, NS, "flux")?.spec.fluxView,
    "ImageVolume",
  );

  // A new MiniCluster is decided from the nodes of now.
  await op.create("later", { size: 1 });
  await op.converge("later");
  assert.equal(fluxViewOf(op.api.peek<Job>(Jobs, NS, "later")!), "Copy");
  assert.equal(op.miniCluster("later")?.status?.fluxView, "Copy");
});

Deno.test("flux view: an empty mounted view fails the entrypoint at once, before anything else, saying why", async () => {
  const root = await Deno.makeTempDir({ prefix: "flux-view-empty-" });
  try {
    const image = "registry.example/flux-view:1";
    const mc = mcOf({
      containers: [{
        image: APP,
        command: "lmp",
        commands: { init: `touch ${root}/init-ran` },
      }],
      flux: { container: { image, mountPath: `${root}/mnt` } },
    });
    const script = buildEntrypointConfigMap(mc, sized("ImageVolume")).data!["wait-0"];
    assert.deepEqual(await scriptProblems("wait-0", script, "error"), []);
    await Deno.mkdir(`${root}/views`);
    const sandboxed = script.replaceAll(MOUNTED_VIEWS, `${root}/views`)
      .replaceAll(TERMINATION_LOG, `${root}/termination-log`);
    const started = performance.now();
    const result = await run("bash", ["-c", sandboxed]);
    const took = performance.now() - started;
    assert.equal(result.code, FLUX_VIEW_EMPTY_EXIT_CODE, result.stderr);
    assert.ok(took < 2_000, `exits fast (${took.toFixed(0)} ms)`);
    const message = fluxViewEmptyMessage(image).replace(MOUNTED_VIEWS, `${root}/views`);
    assert.match(message, /containerd 2\.2/);
    assert.match(message, /viewFrom: Copy/);
    assert.match(message, /--flux-view-mount=copy/);
    assert.equal(result.stderr.trim(), message);
    assert.equal(await Deno.readTextFile(`${root}/termination-log`), message);
    const left = [...Deno.readDirSync(root)].map((e) => e.name).sort();
    assert.deepEqual(left, ["termination-log", "views"], "nothing else ran or was written");

    // With Flux in the view the check passes (the script goes on; here it is stopped right after).
    const hash = `${root}/views/abc123`;
    await Deno.mkdir(`${hash}/bin`, { recursive: true });
    await Deno.writeTextFile(`${hash}/bin/flux`, "#!/bin/sh\n");
    await Deno.chmod(`${hash}/bin/flux`, 0o755);
    const checkOnly = sandboxed.replace(/\nfi\n/, '\nfi\necho "view: ${viewroot}"; exit 0\n');
    const ok = await run("bash", ["-c", checkOnly]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout.trim(), `view: ${hash}`);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("flux view: a Job failed on an empty view is the Failed condition FluxViewEmpty with a Warning Event", () => {
  const image = "registry.example/flux-view:1";
  const job = buildJob(mcOf({ flux: { container: { image } } }), sized("ImageVolume"));
  const failedJob: Job = {
    ...job,
    metadata: { ...job.metadata, uid: "job-uid" },
    status: {
      conditions: [{
        type: "Failed",
        status: "True",
        reason: "PodFailurePolicy",
        message:
          `Container flux-sample for pod flux-operator/flux-sample-0-x7k2p failed with exit ` +
          `code ${FLUX_VIEW_EMPTY_EXIT_CODE} matching FailJob rule at index 1`,
      }],
    },
  };
  const status = computeStatus({
    selector: "hpa-selector=flux-sample",
    requestedSize: 2,
    effectiveSize: 2,
    maximumSize: 2,
    job: failedJob,
    pods: [],
    now: "2026-11-28T12:00:00Z",
  });
  const failed = status.conditions.find((c) => c.type === "Failed")!;
  assert.equal(failed.status, "True");
  assert.equal(failed.reason, FLUX_VIEW_EMPTY);
  assert.ok(failed.message.startsWith(fluxViewEmptyMessage(image)), failed.message);
  assert.match(failed.message, /flux-sample-0-x7k2p/);
  assert.equal(status.fluxView, "ImageVolume");
  const events = conditionEvents([], status.conditions);
  assert.deepEqual(events.filter((e) => e.reason === FLUX_VIEW_EMPTY).map((e) => e.type), [
    "Warning",
  ]);
});

Deno.test("flux view: an operator that may not list the nodes copies under auto", async () => {
  const api = new FakeApiClient();
  api.react((r) =>
    r.resource === "nodes"
      ? new ApiError({ code: 403, reason: "Forbidden", message: "nodes is forbidden" })
      : undefined
  );
  const runtimes = new NodeRuntimes(api, () => 0);
  assert.equal(await runtimes.nodes(), undefined, "forbidden: unknown, no failure");
  await runtimes.nodes();
  assert.equal(api.requests.filter((r) => r.resource === "nodes").length, 1, "kept as well");
  assert.equal(await new FluxViewChooser("auto", runtimes).choose(mcOf()), "Copy");
  // Confined to namespaces (mod.ts), the nodes are not read at all.
  assert.equal(await new FluxViewChooser("auto").choose(mcOf()), "Copy");
  const asked = mcOf({ flux: { container: { viewFrom: "ImageVolume" } } });
  assert.equal(await new FluxViewChooser("auto").choose(asked), "ImageVolume");
  // Another failure is the reconcile's to retry.
  const failing = new FakeApiClient();
  failing.react((r) =>
    r.resource === "nodes"
      ? new ApiError({ code: 500, reason: "InternalError", message: "etcd" })
      : undefined
  );
  await assert.rejects(new NodeRuntimes(failing, () => 0).nodes(), /etcd/);
});

Deno.test("flux view: under restartPolicy OnFailure a container restarted on an empty view makes Ready FluxViewEmpty, with a Warning", async () => {
  const op = new FakeOperator({ pacingOff: ["first-status-delay"] });
  await op.create("onfail", {
    size: 2,
    pod: { restartPolicy: "OnFailure" },
    flux: { container: { viewFrom: "ImageVolume" } },
  });
  await op.converge("onfail");
  const job = op.api.peek<Job>(Jobs, NS, "onfail")!;
  assert.equal(job.spec?.podFailurePolicy, undefined, "OnFailure allows no podFailurePolicy");
  op.seedPods("onfail", 2, 0);
  const pod = op.api.objects<Pod>(Pods).find((p) => p.metadata?.name === "onfail-0-x")!;
  op.api.seed<Pod>(Pods, {
    ...pod,
    status: {
      ...pod.status,
      containerStatuses: [{
        name: "onfail",
        image: APP,
        imageID: "",
        ready: false,
        restartCount: 2,
        state: { waiting: { reason: "CrashLoopBackOff", message: "back-off 20s" } },
        lastState: {
          terminated: { exitCode: FLUX_VIEW_EMPTY_EXIT_CODE, message: "the Flux view ..." },
        },
      }],
    },
  });
  op.sync();
  op.time += 1_000;
  await op.converge("onfail");
  const ready = op.condition("onfail", "Ready")!;
  assert.equal(ready.status, "False");
  assert.equal(ready.reason, FLUX_VIEW_EMPTY);
  assert.match(ready.message!, /0\/2 pods ready; the Flux view image volume/);
  assert.match(ready.message!, /CrashLoopBackOff \(container onfail\)/);
  const warnings = op.api.objects<{ reason?: string; type?: string }>(Events)
    .filter((e) => e.reason === FLUX_VIEW_EMPTY).map((e) => e.type);
  assert.deepEqual(warnings, ["Warning"]);
});

/** What Debian's containerd 1.6.20 says of a container with an image volume (tests/real). */
const CONTAINERD_1_6_MOUNT_FAILURE = 'failed to generate container "0c3e5f9a" spec: failed to ' +
  'generate spec: failed to mkdir "": mkdir : no such file or directory';

/** `name`'s pods of FakeOperator `op` after its pod 0's Flux container waited `waiting`. */
async function waitedOnce(
  op: FakeOperator,
  name: string,
  waiting: { reason: string; message: string },
): Promise<void> {
  op.seedPods(name, 2, 0);
  const pod = op.api.objects<Pod>(Pods).find((p) => p.metadata?.name === `${name}-0-x`)!;
  op.api.seed<Pod>(Pods, {
    ...pod,
    status: {
      ...pod.status,
      phase: "Pending",
      containerStatuses: [{
        name,
        image: APP,
        imageID: "",
        ready: false,
        restartCount: 0,
        state: { waiting },
      }],
    },
  });
  op.sync();
  op.time += 1_000;
  await op.converge(name);
}

Deno.test("flux view: a runtime that cannot mount the view image makes Ready FluxViewNotMounted, naming the cause and the fix, with a Warning", async () => {
  const op = new FakeOperator({ pacingOff: ["first-status-delay"] });
  const image = "registry.example/flux-view:1";
  await op.create("old-runtime", {
    size: 2,
    flux: { container: { image, viewFrom: "ImageVolume" } },
  });
  await op.converge("old-runtime");
  await waitedOnce(op, "old-runtime", {
    reason: "CreateContainerError",
    message: CONTAINERD_1_6_MOUNT_FAILURE,
  });
  const ready = op.condition("old-runtime", "Ready")!;
  assert.equal(ready.status, "False");
  assert.equal(ready.reason, FLUX_VIEW_NOT_MOUNTED);
  assert.ok(
    ready.message!.startsWith(`0/2 pods ready; ${fluxViewNotMountedMessage(image, "Unsupported")}`),
    ready.message,
  );
  assert.match(ready.message!, /viewFrom: Copy .*--flux-view-mount=copy/);
  // The runtime's own words stay, through the pod cache (cache_view.ts keeps waiting containers).
  assert.match(
    ready.message!,
    /CreateContainerError \(container old-runtime\): .*failed to mkdir ""/,
  );
  const warnings = op.api.objects<{ reason?: string; type?: string }>(Events)
    .filter((e) => e.reason === FLUX_VIEW_NOT_MOUNTED).map((e) => e.type);
  assert.deepEqual(warnings, ["Warning"]);
});

Deno.test("flux view: a view image without the view's paths makes Ready FluxViewNotMounted, naming the image, with a Warning", async () => {
  const op = new FakeOperator({ pacingOff: ["first-status-delay"] });
  const image = "registry.example/not-a-view:1";
  await op.create("no-view", { size: 2, flux: { container: { image, viewFrom: "ImageVolume" } } });
  await op.converge("no-view");
  // containerd 2.4.2's words on a real node, for the flux-app image mounted as the view.
  await waitedOnce(op, "no-view", {
    reason: "CreateContainerError",
    message: "failed to mount image volume: ImageVolumeMountFailed: failed to ensure image " +
      'subpath "opt/views" in "/var/lib/containerd/io.containerd.grpc.v1.cri/image-volumes/' +
      '2822b": stat opt/views: no such file or directory',
  });
  const ready = op.condition("no-view", "Ready")!;
  assert.equal(ready.reason, FLUX_VIEW_NOT_MOUNTED);
  assert.ok(
    ready.message!.startsWith(`0/2 pods ready; ${fluxViewNotMountedMessage(image, "NoSuchPath")}`),
    ready.message,
  );
  assert.match(ready.message!, /is not a Flux view image/);
  assert.match(ready.message!, /failed to ensure image subpath "opt\/views"/);
  const warnings = op.api.objects<{ reason?: string; type?: string }>(Events)
    .filter((e) => e.reason === FLUX_VIEW_NOT_MOUNTED).map((e) => e.type);
  assert.deepEqual(warnings, ["Warning"]);
});

Deno.test("flux view: another CreateContainerError, or the copied view, is not a view that cannot be mounted", async () => {
  const op = new FakeOperator({ pacingOff: ["first-status-delay"] });
  // A name still reserved by an earlier attempt: a busy runtime, retried by the kubelet.
  await op.create("busy", { size: 2, flux: { container: { viewFrom: "ImageVolume" } } });
  await op.converge("busy");
  await waitedOnce(op, "busy", {
    reason: "CreateContainerError",
    message: 'failed to reserve container name "busy_busy-0-x": name "busy_busy-0-x" is reserved',
  });
  assert.equal(op.condition("busy", "Ready")!.reason, "PodsNotReady");
  // Copied, no image volume is mounted: an empty path is some other mount's problem.
  await op.create("copied", { size: 2, flux: { container: { viewFrom: "Copy" } } });
  await op.converge("copied");
  await waitedOnce(op, "copied", {
    reason: "CreateContainerError",
    message: CONTAINERD_1_6_MOUNT_FAILURE,
  });
  // The pods' progress is written at the status progress interval: the wait is seen.
  op.time += TIMING.statusProgressIntervalMs;
  await op.converge("copied");
  const ready = op.condition("copied", "Ready")!;
  assert.equal(ready.reason, "PodsNotReady");
  assert.match(ready.message!, /CreateContainerError \(container copied\)/);
  assert.equal(
    op.api.objects<{ reason?: string }>(Events).filter((e) => e.reason === FLUX_VIEW_NOT_MOUNTED)
      .length,
    0,
  );
});

Deno.test("flux view: mounted, logging.quiet keeps the broker configuration out of the Flux container's log, as the copy does", () => {
  const shows = (script: string) => script.includes("🐸 Broker configuration");
  const quiet = mcOf({ logging: { quiet: true } });
  const mounted = buildEntrypointConfigMap(quiet, sized("ImageVolume")).data!;
  assert.ok(!shows(mounted["wait-0"]), "the job's output alone, as the Go operator's CI expects");
  const copied = buildEntrypointConfigMap(quiet, sized("Copy")).data!;
  assert.ok(!shows(copied["wait-0"]));
  assert.ok(shows(copied["flux-view"]), "the init container's log keeps it (the Go operator's)");
  const loud = buildEntrypointConfigMap(mcOf(), sized("ImageVolume")).data!;
  assert.ok(shows(loud["wait-0"]), "without quiet the Flux container shows what it wrote");
});
