// Real Flux on real nodes: MiniClusters of the local flux-view and flux-app images, reconciled by
// the operator running in-cluster. Every assertion reads what the brokers printed (pod logs) or
// what they answer (`kubectl exec`).

import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { FLUX_APP_IMAGE, FLUX_VIEW_IMAGE } from "../../hack/images/refs.ts";
import { eventually } from "../harness.ts";
import {
  kubectl,
  REAL_NAMESPACE,
  type RealEnv,
  realMiniCluster,
  realTest,
  recordedRuntime,
} from "./env.ts";

/** The Flux container is named after its MiniCluster (as the Go operator names it). */

async function condition(env: RealEnv, name: string, type: string): Promise<Condition | undefined> {
  const mc = await env.client.get<MiniCluster>(MiniClusters, REAL_NAMESPACE, name);
  return (mc.status?.conditions as Condition[] | undefined)?.find((c) => c.type === type);
}

async function waitCondition(
  env: RealEnv,
  name: string,
  type: string,
  timeoutMs = 180_000,
): Promise<Condition> {
  return await eventually(async () => {
    const c = await condition(env, name, type);
    if (c?.status !== "True") throw new Error(`${name}: ${type} is ${JSON.stringify(c)}`);
    return c;
  }, { timeoutMs, intervalMs: 1000 });
}

/** The pods of `name`, once there are `count` of them and each has a container running. */
async function runningPods(env: RealEnv, name: string, count: number): Promise<Pod[]> {
  return await eventually(async () => {
    const pods = await env.pods(name);
    const running = pods.filter((p) => p.status?.containerStatuses?.some((c) => c.state?.running));
    if (running.length !== count) {
      throw new Error(`${name}: ${running.length}/${count} pods running`);
    }
    return running;
  }, { timeoutMs: 180_000, intervalMs: 500 });
}

/** Runs `script` in the lead broker through the generated connect script (a shell on Flux). */
async function onLeadBroker(env: RealEnv, name: string, script: string): Promise<string> {
  const lead = await podName(env, name, 0);
  return await env.exec(lead, name, ["bash", "/mnt/flux/flux-connect.sh"], script);
}

/** `flux resource list` → the NNODES of a state ("free", "down", ...). */
function nodesIn(resourceList: string, state: string): number | undefined {
  const line = resourceList.split("\n").find((l) => l.trim().startsWith(`${state} `));
  return line === undefined ? undefined : Number(line.trim().split(/\s+/)[1]);
}

async function podName(env: RealEnv, name: string, index: number): Promise<string> {
  const pods = await env.pods(name);
  const pod = pods.find((p) =>
    p.metadata?.labels?.["batch.kubernetes.io/job-completion-index"] === `${index}`
  );
  if (!pod) throw new Error(`${name}: no pod of index ${index}`);
  return pod.metadata!.name!;
}

realTest(
  "real: three brokers form one instance, run a job on every rank, and succeed",
  async (env) => {
    const name = "three";
    const t0 = performance.now();
    await env.apply(realMiniCluster(name, { size: 3 }, {
      launcher: true,
      commands: {
        script: [
          "flux overlay status --no-pretty",
          "flux resource list",
          "flux run -N3 hostname",
        ].join("\n"),
      },
    }));
    await waitCondition(env, name, "Succeeded");
    const seconds = ((performance.now() - t0) / 1000).toFixed(1);
    const lead = await podName(env, name, 0);
    const log = await env.logs(lead, name);
    // Every broker joined (the overlay is full) and the resource set has three nodes.
    assert.match(log, /\bfull\b/, log);
    assert.equal(nodesIn(log, "free"), 3, log);
    // The job ran once on each rank: each pod's hostname.
    for (let i = 0; i < 3; i++) assert.match(log, new RegExp(`^${name}-${i}$`, "m"), log);
    assert.match(log, /Flux finished with exit code 0/);
    console.log(
      `  size 3: kubectl apply to Succeeded (all brokers joined, job run) in ${seconds} s`,
    );
    const job = JSON.parse(await kubectl(["-n", REAL_NAMESPACE, "get", "job", name, "-o", "json"]));
    assert.ok(
      job.status.conditions.some((c: Condition) => c.type === "Complete" && c.status === "True"),
    );
  },
);

realTest("real: batch mode runs every command and logging.timed reports timings", async (env) => {
  const name = "batch";
  await env.apply(realMiniCluster(name, { size: 2, logging: { timed: true } }, {
    batch: true,
    command: "echo first-output\necho second-output\nhostname",
    // Each job's output is a file in the container of the rank that ran it: print them all.
    commands: { post: "cat /tmp/fluxout/job-*.out 2>/dev/null || true" },
  }));
  await waitCondition(env, name, "Succeeded");
  const lead = await env.logs(await podName(env, name, 0), name);
  const all = lead + await env.logs(await podName(env, name, 1), name);
  assert.match(all, /^first-output$/m, all);
  assert.match(all, /^second-output$/m, all);
  assert.match(all, new RegExp(`^${name}-[01]$`, "m"), all);
  assert.match(lead, /FLUXTIME fluxstart wall time \d+:\d+\.\d+/, lead);
  assert.match(lead, /FLUXTIME fluxsubmit wall time \d+:\d+\.\d+/, lead);
});

realTest(
  "real: an interactive cluster stays up, answers through flux-connect.sh, and goes on delete",
  async (env) => {
    const name = "interactive";
    await env.apply(realMiniCluster(name, { size: 2, interactive: true }));
    await runningPods(env, name, 2);
    const list = await eventually(async () => {
      const out = await onLeadBroker(env, name, "flux resource list\n");
      if (nodesIn(out, "free") !== 2) throw new Error(`not every broker up yet:\n${out}`);
      return out;
    }, { timeoutMs: 120_000, intervalMs: 2000 });
    assert.equal(nodesIn(list, "free"), 2, list);
    await waitCondition(env, name, "Ready");
    await kubectl(["-n", REAL_NAMESPACE, "delete", "minicluster", name, "--wait=true"]);
    await eventually(async () => {
      const left = await env.pods(name);
      if (left.length > 0) throw new Error(`${left.length} pods left`);
      const children = await kubectl([
        "-n",
        REAL_NAMESPACE,
        "get",
        "job,svc,cm,secret",
        "-l",
        `flux-framework.org/minicluster=${name}`,
        "-o",
        "name",
      ]);
      if (children.trim() !== "") throw new Error(`children left: ${children}`);
    }, { timeoutMs: 90_000, intervalMs: 1000 });
  },
);

realTest("real: a failing command makes the MiniCluster Failed", async (env) => {
  const name = "failing";
  await env.apply(realMiniCluster(name, { size: 1, backoffLimit: 1 }, { command: "false" }));
  const failed = await waitCondition(env, name, "Failed");
  const lead = await podName(env, name, 0).catch(() => undefined);
  if (lead) {
    const log = await env.logs(lead, name).catch(() => "");
    if (log) assert.match(log, /Flux finished with exit code [1-9]/, log);
  }
  assert.equal(
    (await condition(env, name, "Succeeded"))?.status ?? "False",
    "False",
    failed.message,
  );
});

realTest(
  "real: scaling within maxSize adds a broker to the running instance and removes it",
  async (env) => {
    const name = "elastic";
    await env.apply(realMiniCluster(name, { size: 2, maxSize: 3, interactive: true }));
    await runningPods(env, name, 2);
    const resources = async (free: number) =>
      await eventually(async () => {
        const out = await onLeadBroker(env, name, "flux resource list\n");
        if (nodesIn(out, "free") !== free) throw new Error(`want ${free} free nodes:\n${out}`);
        return out;
      }, { timeoutMs: 150_000, intervalMs: 2000 });
    const before = await resources(2);
    assert.equal(nodesIn(before, "down"), 1, before);
    await kubectl(["-n", REAL_NAMESPACE, "scale", "minicluster", name, "--replicas=3"]);
    await runningPods(env, name, 3);
    const grown = await resources(3);
    assert.equal(nodesIn(grown, "down"), 0, grown);
    await kubectl(["-n", REAL_NAMESPACE, "scale", "minicluster", name, "--replicas=2"]);
    const shrunk = await resources(2);
    assert.equal(nodesIn(shrunk, "down"), 1, shrunk);
  },
);

realTest("real: a sidecar's port is reached by its Service name from another pod", async (env) => {
  const name = "sidecar";
  const mc = realMiniCluster(name, { size: 1, interactive: true }, { runFlux: true });
  mc.spec!.containers!.push({
    name: "web",
    image: FLUX_APP_IMAGE,
    noWrapEntrypoint: true,
    command: "python3 -m http.server 8080 --directory /etc",
    ports: [8080],
  } as never);
  await env.apply(mc);
  await runningPods(env, name, 1);
  // The per-container Service is "<name>-<container>"; a client pod on the real node asks it.
  const client = realMiniCluster(`${name}-client`, { size: 1 }, {
    launcher: true,
    command:
      `python3 -c "import urllib.request as u; print(u.urlopen('http://${name}-web:8080/hostname').read().decode())"`,
  });
  await env.apply(client);
  await waitCondition(env, `${name}-client`, "Succeeded");
  const log = await env.logs(await podName(env, `${name}-client`, 0), `${name}-client`);
  assert.match(log, new RegExp(`^${name}-0$`, "m"), log);
  // And from this machine, through `kubectl port-forward` to the pod.
  const pod = await podName(env, name, 0);
  assert.equal((await throughPortForward(pod, 8080, "/hostname")).trim(), `${name}-0`);
  // The CURVE certificate is mounted into the Flux container only, readable by its owner only;
  // the broker's copy is 0600. The sidecar has the scripts' mount without it.
  const cert = "/flux_operator/curve.cert";
  const mode = await env.exec(pod, name, ["stat", "-c", "%a %U:%G", "-L", cert]);
  assert.equal(mode.trim(), "400 root:root");
  const copy = await env.exec(pod, name, ["stat", "-c", "%a", "/mnt/flux/config/curve/curve.cert"]);
  assert.equal(copy.trim(), "600", copy);
  const sidecar = await env.exec(pod, "web", [
    "sh",
    "-c",
    `test -e ${cert} && echo present || echo absent`,
  ]);
  assert.equal(sidecar.trim(), "absent");
});

/** GETs `path` from `port` of a pod through `kubectl port-forward` (a local port it picks). */
async function throughPortForward(pod: string, port: number, path: string): Promise<string> {
  const kubeconfig = Deno.env.get("MC_KUBECONFIG") ??
    new URL("../../.cluster/kubeconfig", import.meta.url).pathname;
  const child = new Deno.Command("kubectl", {
    args: ["--kubeconfig", kubeconfig, "-n", REAL_NAMESPACE, "port-forward", pod, `:${port}`],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "";
    let local: string | undefined;
    while (!local) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`kubectl port-forward ended: ${seen}`);
      seen += value;
      local = seen.match(/Forwarding from 127\.0\.0\.1:(\d+)/)?.[1];
    }
    reader.releaseLock();
    const res = await fetch(`http://127.0.0.1:${local}${path}`);
    return await res.text();
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await child.stdout.cancel().catch(() => {});
    await child.stderr.cancel().catch(() => {});
  }
}

realTest(
  "real: an image that is not present reports ErrImagePull, at once and locally",
  async (env) => {
    const name = "missing-image";
    await env.apply(realMiniCluster(name, { size: 1 }, { image: "minicluster.local/not-built:1" }));
    const ready = await eventually(async () => {
      const c = await condition(env, name, "Ready");
      if (!/ErrImagePull|ImagePullBackOff/.test(c?.message ?? "")) {
        throw new Error(`Ready says ${c?.message}`);
      }
      return c!;
    }, { timeoutMs: 90_000, intervalMs: 1000 });
    assert.equal(ready.status, "False");
    const pod = (await env.pods(name))[0];
    const waiting = pod.status?.containerStatuses?.find((c) => c.state?.waiting)?.state?.waiting;
    // containerd was asked for a registry that is a closed port on loopback, never the network.
    assert.match(waiting?.message ?? "", /127\.0\.0\.1:9|connection refused/, waiting?.message);
  },
);

realTest("real: under logging.strict too, Flux's exit code fails the Job", async (env) => {
  const name = "strict-failing";
  await env.apply(
    realMiniCluster(name, { size: 1, backoffLimit: 1, logging: { strict: true } }, {
      command: "false",
    }),
  );
  const failed = await waitCondition(env, name, "Failed");
  assert.equal(
    (await condition(env, name, "Succeeded"))?.status ?? "False",
    "False",
    failed.message,
  );
  const job = JSON.parse(await kubectl(["-n", REAL_NAMESPACE, "get", "job", name, "-o", "json"]));
  assert.ok(
    job.status.conditions.some((c: Condition) => c.type === "Failed" && c.status === "True"),
    JSON.stringify(job.status),
  );
});

// A script added to the view needs a writable view: the copy (the mounted view is read-only).
realTest(
  "real: FLUX_RC_EXTRA makes the broker run the copied view's rc1.d scripts",
  async (env) => {
    const name = "rc-extra";
    // An rc1.d script that exists only in the copied view (/mnt/flux/view), never in the
    // install's own confdir: it runs only if FLUX_RC_EXTRA names the directory that holds rc1.d.
    const marker = "/tmp/mc-rc-extra-ran";
    await env.apply(realMiniCluster(name, {
      size: 1,
      flux: { container: { image: FLUX_VIEW_IMAGE, viewFrom: "Copy" } },
    }, {
      launcher: true,
      commands: {
        pre: [
          'mkdir -p "${viewroot}/etc/flux/rc1.d"',
          `printf '#!/bin/sh\\ntouch ${marker}\\n' > "\${viewroot}/etc/flux/rc1.d/99-mc-rc-extra"`,
          'chmod +x "${viewroot}/etc/flux/rc1.d/99-mc-rc-extra"',
        ].join("\n"),
        script: `echo "FLUX_RC_EXTRA=$FLUX_RC_EXTRA"\nls ${marker} && echo rc-extra-ran`,
      },
    }));
    await waitCondition(env, name, "Succeeded");
    const log = await env.logs(await podName(env, name, 0), name);
    assert.match(log, /^FLUX_RC_EXTRA=\/mnt\/flux\/view\/etc\/flux$/m, log);
    assert.match(log, /^rc-extra-ran$/m, log);
  },
);

// Mounted, FLUX_RC_EXTRA names the view image's own etc/flux, whose rc1.d holds Fluxion's script:
// the broker says it ran it from the read-only mount.
realTest(
  "real: with the view mounted, FLUX_RC_EXTRA is the image's etc/flux and the broker runs its rc1.d",
  async (env) => {
    const name = "rc-mounted";
    await env.apply(realMiniCluster(name, {
      size: 1,
      flux: { container: { image: FLUX_VIEW_IMAGE, viewFrom: "ImageVolume" } },
    }, {
      launcher: true,
      commands: { script: 'echo "FLUX_RC_EXTRA=$FLUX_RC_EXTRA"\nflux module list' },
    }));
    await waitCondition(env, name, "Succeeded");
    const log = await env.logs(await podName(env, name, 0), name);
    assert.match(log, /^FLUX_RC_EXTRA=\/opt\/views\/\._view\/[^/]+\/etc\/flux$/m, log);
    const extra = /^FLUX_RC_EXTRA=(\S+)$/m.exec(log)![1];
    assert.ok(log.includes(`rc1.0: running ${extra}/rc1.d/01-sched-fluxion`), log);
    assert.match(log, /sched-fluxion-qmanager/, log);
  },
  { ignore: recordedRuntime() === "debian" },
);

/** A CURVE certificate of a fresh key pair, as Flux writes one (keys from WebCrypto). */
async function certificate(): Promise<{ text: string; publicKey: string; secretKey: string }> {
  const { generateCurveCertificate } = await import(
    "../../controllers/minicluster/children/curve.ts"
  );
  return await generateCurveCertificate({ name: "mc-real-e2e" });
}

realTest(
  "real: a given curveCert Flux accepts forms the instance; one it would refuse is SpecInvalid",
  async (env) => {
    const good = await certificate();
    const other = await certificate();
    const withCert = (name: string, curveCert: string) => {
      const mc = realMiniCluster(name, { size: 2 }, {
        launcher: true,
        command: "flux run -N2 hostname",
      });
      mc.spec.flux = { ...mc.spec.flux, curveCert };
      return mc;
    };
    // Keys of two pairs: real brokers refuse it at load ("Invalid argument"); the operator says so
    // and creates no pods.
    const mixed = good.text.replace(good.publicKey, other.publicKey);
    await env.apply(withCert("cert-refused", mixed));
    const invalid = await waitCondition(env, "cert-refused", "SpecInvalid", 60_000);
    assert.match(invalid.message ?? "", /curveCert: .*not the secret-key's public key/);
    assert.equal((await env.pods("cert-refused")).length, 0);
    // The same with Flux's metadata rules (an "_") and a key line not indented.
    await env.apply(withCert("cert-meta", good.text.replace("mc-real-e2e", "mc_real")));
    assert.match(
      (await waitCondition(env, "cert-meta", "SpecInvalid", 60_000)).message ?? "",
      /has "_"/,
    );
    // A valid given certificate is the one the brokers use: both join and run the job.
    await env.apply(withCert("cert-given", good.text));
    await waitCondition(env, "cert-given", "Succeeded");
    const log = await env.logs(await podName(env, "cert-given", 0), "cert-given");
    for (let i = 0; i < 2; i++) assert.match(log, new RegExp(`^cert-given-${i}$`, "m"), log);
  },
);

realTest(
  "real: a MiniCluster bursting into another joins its instance with the same ranks",
  async (env) => {
    // Both clusters share one certificate (the overlay is one network) and list the same hosts:
    // lead-0, lead-1, burst-0. The burst cluster names the lead broker by its DNS name.
    const cert = await certificate();
    const lead = realMiniCluster("lead", { size: 2, interactive: true });
    lead.spec.flux = {
      ...lead.spec.flux,
      curveCert: cert.text,
      bursting: { clusters: [{ name: "burst", size: 1 }] },
    };
    const burst = realMiniCluster("burst", { size: 1, interactive: true });
    burst.spec.flux = {
      ...burst.spec.flux,
      curveCert: cert.text,
      bursting: {
        leadBroker: {
          address: `lead-0.lead.${REAL_NAMESPACE}.svc.cluster.local`,
          name: "lead",
          size: 2,
        },
        clusters: [{ name: "burst", size: 1 }],
      },
    };
    await env.apply(lead);
    await env.apply(burst);
    await runningPods(env, "lead", 2);
    await runningPods(env, "burst", 1);
    // Every rank up: the lead's two brokers and the burst broker (rank 2 in both hostlists; with
    // the lead broker listed twice the burst broker took rank 3 and never joined).
    const status = await eventually(async () => {
      const out = await onLeadBroker(env, "lead", "flux overlay status --no-pretty\n");
      if (!/\bfull\b/.test(out)) throw new Error(`not every broker joined:\n${out}`);
      return out;
    }, { timeoutMs: 180_000, intervalMs: 2000 });
    assert.match(status, /\bfull\b/, status);
    // The overlay is full before the scheduler hears that rank 2 is up (resource.acquire comes
    // later), and Fluxion refuses -N3 as unsatisfiable while a rank is down: wait for 3 free.
    await eventually(async () => {
      const list = await onLeadBroker(env, "lead", "flux resource list\n");
      if (nodesIn(list, "free") !== 3) throw new Error(`not 3 free nodes:\n${list}`);
    }, { timeoutMs: 60_000, intervalMs: 1000 });
    const ran = await onLeadBroker(env, "lead", "flux run -N3 --label-io hostname\n");
    assert.match(ran, /^2: burst-0$/m, ran);
    assert.match(ran, /^0: lead-0$/m, ran);
  },
  { timeoutMs: 400_000 },
);
