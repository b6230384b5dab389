// Crash at every write, CI subset: each reconcile path (create, update, scale, invalid→valid,
// delete) is SIGKILLed after its first, middle and last write, restarted, and must converge to the
// reference end state. The whole matrix (every write) runs with `deno task faults`.
import assert from "node:assert/strict";
import { KubeClient } from "../../runtime/client/client.ts";
import { kubeconfigPath } from "../harness.ts";
import { crashMatrix, PATHS } from "./crash.ts";
import { printSummary } from "./env.ts";

Deno.test("faults: crash after the first, middle and last write of every reconcile path", async () => {
  const kubeconfig = await kubeconfigPath();
  const client = await KubeClient.fromKubeconfig(kubeconfig);
  try {
    const results = await crashMatrix(client, kubeconfig, PATHS, { all: false, concurrency: 6 });
    printSummary("crash at write (CI subset)", results);
    const failed = results.filter((r) => !r.ok);
    assert.equal(failed.length, 0, failed.map((r) => `${r.plan}: ${r.detail}`).join("\n\n"));
  } finally {
    client.close();
  }
});
