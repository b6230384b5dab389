/**
 * MiniCluster manifests that exercise the entrypoint scripts, shared by the golden tests
 * (entrypoint_test.ts) and the bash/shellcheck tests (scripts_test.ts).
 */
import { type DefaultedMiniCluster, type MiniClusterSpec, withDefaults } from "../../api/mod.ts";

export const UID = "5b0c7a0e-8f3e-4a53-9a1f-0c2d1e4f6a7b";

/** A MiniCluster as the API server returns it, defaulted as the reconciler does. */
export function miniCluster(
  spec: MiniClusterSpec,
  name = "flux-sample",
  namespace = "flux-operator",
): DefaultedMiniCluster {
  return withDefaults({
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name, namespace, uid: UID },
    spec,
  });
}

const image = "ghcr.io/rse-ops/lammps:flux-sched-focal";

/** Golden cases: one per feature area of the scripts. */
export const cases: Record<string, MiniClusterSpec> = {
  minimal: { size: 4, containers: [{ image, command: "lmp -v x 2 -in in.reaxc.hns -nocite" }] },
  interactive: { size: 2, interactive: true, containers: [{ image }] },
  "cpu-resources": {
    size: 2,
    tasks: 4,
    containers: [{
      image,
      command: "lmp -in in.melt",
      resources: { limits: { cpu: 2, memory: "2Gi" }, requests: { cpu: "2" } },
    }],
  },
  batch: {
    size: 4,
    tasks: 8,
    containers: [{
      image,
      batch: true,
      logs: "/tmp/out",
      command: 'echo hello\n\necho "second $HOSTNAME"\nsleep 1\n',
      commands: { pre: "echo pre", post: "echo post" },
    }],
  },
  "batch-raw": {
    size: 2,
    containers: [{
      image,
      batch: true,
      batchRaw: true,
      command: "flux submit -N 2 hostname\nflux queue drain\n",
    }],
  },
  launcher: {
    size: 3,
    tasks: 2,
    containers: [{
      image,
      launcher: true,
      command: "snakemake --cores 1 --flux",
      commands: { prefix: "fusion", brokerPre: "echo broker", workerPre: "echo worker" },
    }],
  },
  "multiple-containers": {
    size: 2,
    containers: [
      {
        image,
        runFlux: true,
        command: "lmp -in in.reaxc",
        commands: { init: "yum install -y time" },
      },
      {
        name: "api",
        image: "ghcr.io/flux-framework/flux-restful-api",
        command: "python3 app.py --port 5000",
        ports: [5000],
        commands: { servicePre: "echo ready", post: "echo finished" },
      },
      { name: "nginx", image: "nginx", noWrapEntrypoint: true, ports: [80] },
      {
        name: "rank-printer",
        image: "ubuntu:noble",
        commands: { script: '#!/bin/bash\necho "This is task \\${FLUX_TASK_RANK}"\n' },
      },
    ],
    flux: { noWaitSocket: false },
  },
  "submit-options": {
    size: 4,
    tasks: 2,
    maxSize: 8,
    containers: [{ image, command: "hostname" }],
    flux: {
      submitCommand: "flux mini submit",
      optionFlags: "-ompi=openmpi@5 -o cpu-affinity=per-task",
      wrap: "strace,-e,network,-tt",
      connectTimeout: "10s",
      topology: "kary:2",
      logLevel: 7,
      disableSocket: true,
      completeWorkers: true,
      scheduler: { simple: true },
    },
  },
  "min-size": { size: 4, minSize: 2, containers: [{ image, command: "hostname" }] },
  // The lead broker starts the queue reporter (issue 39, item 1); the followers do not.
  "queue-report": {
    size: 2,
    flux: { queueReport: { port: 8070, intervalSeconds: 15 } },
    containers: [{ image, command: "sleep 30" }],
  },
  bursting: {
    size: 2,
    containers: [{ image, command: "hostname" }],
    flux: {
      bursting: {
        leadBroker: { address: "lead.example.org", name: "flux-lead", size: 4, port: 30093 },
        clusters: [{ size: 3 }, { name: "gke", size: 1 }],
      },
    },
  },
  "bursting-hostlist": {
    size: 2,
    containers: [{ image, command: "hostname" }],
    flux: { bursting: { hostlist: "flux-sample-[0-1],remote-[0-3]" } },
  },
  "broker-config": {
    size: 2,
    containers: [{ image, command: "hostname" }],
    flux: {
      brokerConfig: '[bootstrap]\ncurve_cert = "/mnt/flux/config/curve/curve.cert"\n' +
        'hosts = [ { host = "flux-sample-[0-1]" } ]\n',
    },
  },
  logging: {
    size: 2,
    containers: [{ image, command: "hostname", commands: { init: "echo init\necho more" } }],
    logging: { quiet: true, strict: true, debug: true, zeromq: true, timed: true },
  },
  "logging-batch": {
    size: 2,
    containers: [{ image, batch: true, command: "hostname\n" }],
    logging: { quiet: true, timed: true },
  },
  archive: {
    size: 2,
    containers: [{ image, command: "hostname" }],
    archive: { path: "/state/archive.sqlite" },
  },
  "custom-flux-view": {
    size: 2,
    containers: [{ image, command: "hostname" }],
    network: { headlessName: "flux-net" },
    flux: {
      container: {
        image: "ghcr.io/converged-computing/flux-view-rocky:tag-9",
        name: "my-view",
        mountPath: "/opt/my flux",
        pythonPath: "/opt/my flux/view/lib/python3.11/site-packages",
      },
      environment: { FLUX_URI_RESOLVE: "local", GREETING: 'it\'s "quoted" $HOME' },
      scheduler: { queuePolicy: "easy" },
    },
  },
  "disable-view": {
    size: 2,
    containers: [{ image: "fluxrm/flux-sched:jammy", command: "hostname" }],
    flux: { container: { disable: true } },
  },
  "custom-script": {
    size: 2,
    containers: [{
      image,
      commands: {
        script: '#!/bin/bash\necho "This is task \\${FLUX_TASK_RANK}"\nMINICLUSTER_SCRIPT_EOF\n',
      },
    }],
  },
  drain: {
    size: 4,
    maxSize: 6,
    interactive: true,
    flux: { drainGracePeriodSeconds: 120 },
    containers: [{ image, lifeCycle: { preStopExec: "echo 'saving' > /tmp/saved" } }],
  },
};

/**
 * Everything an operator-derived value could use to break out of a script: every injection
 * would touch `marker`.
 */
export function nasty(marker: string): string {
  return `it's $(touch ${marker}) \`touch ${marker}\`; touch ${marker} \n touch ${marker} " \\ \${HOME}`;
}

/**
 * A manifest whose operator-derived values are all hostile (names and namespaces cannot look like
 * this in a real cluster; the builders must not rely on that). Paths live under `root`.
 */
export function hostileMiniCluster(root: string, marker: string): DefaultedMiniCluster {
  const evil = nasty(marker);
  return miniCluster(
    {
      size: 2,
      maxSize: 3,
      containers: [
        { image, runFlux: true, logs: `${root}/logs ${evil}`, command: "hostname" },
        { name: "side", image, command: "echo side-started" },
      ],
      network: { headlessName: `net${evil}` },
      archive: { path: `${root}/archive ${evil}` },
      flux: {
        container: { mountPath: `${root}/mnt ${evil}`, pythonPath: `/py/${evil}` },
        wrap: `strace,${evil}`,
        connectTimeout: `5s${evil}`,
        topology: `kary:${evil}`,
        environment: { HOSTILE: evil },
        bursting: { clusters: [{ name: `burst${evil}`, size: 2 }] },
        drainGracePeriodSeconds: 60,
      },
    },
    `mc${evil}`,
    `ns${evil}`,
  );
}
