// envtest-like harness for integration and e2e tests: one control plane per `deno test` run,
// the CRDs of crds/ installed, a fresh namespace per test, torn down even when the test fails.
//
// Which control plane, first match wins:
//   1. $MC_KUBECONFIG (set by `deno task test`, which brings up the full KWOK cluster);
//   2. a healthy cluster in .cluster/ (`deno task cluster up`);
//   3. a private control plane (etcd + kube-apiserver only) started for this process in a
//      temporary directory and stopped when the process unloads (testing/private_cluster.ts: one
//      abandoned by a killed run is swept by the next).

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { KubeClient } from "../runtime/client/client.ts";
import { isAlreadyExists, isNotFound } from "../runtime/client/errors.ts";
import { Namespaces, ServiceAccounts } from "../runtime/client/resources.ts";
import { status } from "../hack/cluster/lifecycle.ts";
import { installCrds } from "../testing/crds.ts";
import { startPrivateCluster } from "../testing/private_cluster.ts";

export interface TestEnv {
  client: KubeClient;
  namespace: string;
  kubeconfig: string;
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const DEV_CLUSTER_DIR = join(ROOT, ".cluster");
const DEFAULT_TIMEOUT_MS = 60_000;

let setup: Promise<string> | undefined;

/**
 * Ensures a control plane (reuse MC_KUBECONFIG or a running .cluster/, else start one with
 * --control-plane-only for this process and stop it at unload) and installs crds/*.yaml
 * (waits for Established). Memoized: every test of the run shares it.
 */
export function kubeconfigPath(): Promise<string> {
  return setup ??= (async () => {
    const kubeconfig = await controlPlane();
    await installCrds(kubeconfig);
    return kubeconfig;
  })();
}

/**
 * Whether pods can run: the cluster has a controller manager, a scheduler and KWOK nodes.
 * Decided without IO at registration time, so use it as `ignore: !fullCluster()`.
 * MC_FULL_CLUSTER=1/0 overrides; MC_KUBECONFIG alone means the full cluster of `deno task test`.
 */
export function fullCluster(): boolean {
  const forced = Deno.env.get("MC_FULL_CLUSTER");
  if (forced !== undefined) return forced === "1" || forced === "true";
  if (Deno.env.get("MC_KUBECONFIG")) return true;
  try {
    const state = JSON.parse(Deno.readTextFileSync(join(DEV_CLUSTER_DIR, "state.json")));
    return state.mode === "full";
  } catch {
    return false;
  }
}

async function controlPlane(): Promise<string> {
  const fromEnv = Deno.env.get("MC_KUBECONFIG");
  if (fromEnv) return fromEnv;
  const dev = await status(DEV_CLUSTER_DIR).catch(() => undefined);
  if (dev?.healthy && dev.kubeconfig) return dev.kubeconfig;

  return await startPrivateCluster({ prefix: ENVTEST_PREFIX, controlPlaneOnly: true });
}

/** Prefix of the private control planes a test run starts (and sweeps when abandoned). */
const ENVTEST_PREFIX = "minicluster-envtest-";

/** "Reconcile creates the Job!" → "reconcile-creates-the-job", short enough for a name. */
export function namespaceSlug(testName: string): string {
  const slug = testName.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "");
  return slug.slice(0, 40).replace(/-+$/, "") || "test";
}

export function testNamespaceName(testName: string): string {
  const random = Math.random().toString(36).slice(2, 8).padEnd(6, "0");
  return `t-${namespaceSlug(testName)}-${random}`;
}

/** Registers a Deno.test that gets a fresh namespace on the shared control plane; teardown even on failure. */
export function integrationTest(
  name: string,
  fn: (env: TestEnv) => Promise<void>,
  opts: {
    timeoutMs?: number;
    ignore?: boolean;
    /** Labels of the test's namespace besides the harness's own (e.g. an admission opt-in). */
    namespaceLabels?: Record<string, string>;
  } = {},
): void {
  Deno.test({
    name,
    ignore: opts.ignore,
    async fn() {
      const kubeconfig = await kubeconfigPath();
      const client = await KubeClient.fromKubeconfig(kubeconfig);
      const namespace = testNamespaceName(name);
      try {
        await client.create(Namespaces, {
          metadata: {
            name: namespace,
            labels: { ...opts.namespaceLabels, "minicluster.flux-framework.org/test": "true" },
          },
        });
        // The controller manager creates it too, but pods are rejected until it exists, and a
        // control-plane-only cluster has no controller manager.
        await client.create(ServiceAccounts, { metadata: { name: "default", namespace } })
          .catch((e) => {
            if (!isAlreadyExists(e)) throw e;
          });
        await withTimeout(
          fn({ client, namespace, kubeconfig }),
          opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
          name,
        );
      } finally {
        await client.delete(Namespaces, undefined, namespace).catch((e) => {
          if (!isNotFound(e)) throw e;
        });
        client.close();
      }
    },
  });
}

/** Rejects when `p` has not settled within `ms` (and clears its timer either way). */
export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Retries `fn` until it stops throwing; rethrows its last error after `timeoutMs`. */
export async function eventually<T>(
  fn: () => T | Promise<T>,
  opts: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const intervalMs = opts.intervalMs ?? 100;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (Date.now() + intervalMs > deadline) throw e;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}

/** Runs kubectl against the test's cluster and namespace; resolves to stdout, throws with stderr. */
export async function kubectl(env: TestEnv, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("kubectl", {
    args: ["--kubeconfig", env.kubeconfig, "--namespace", env.namespace, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  if (!out.success) {
    throw new Error(`kubectl ${args.join(" ")} failed (${out.code}): ${text(out.stderr)}`);
  }
  return text(out.stdout);
}
