/**
 * `deno task dev` itself (deno.json → hack/dev.ts → the operator), as a developer runs it: against
 * $KUBECONFIG, until stopped. Its shell once passed `${KUBECONFIG:-.cluster/kubeconfig}` verbatim
 * as the kubeconfig path and the operator exited at once.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { freeLoopbackPort } from "../../hack/cluster/ports.ts";
import { groupMembers, stopGroups } from "../../hack/cluster/processes.ts";
import { eventually, integrationTest } from "../harness.ts";

const ROOT = fileURLToPath(new URL("./../..", import.meta.url));

integrationTest(
  "deno task dev runs the operator against $KUBECONFIG until stopped",
  async ({ kubeconfig, namespace }) => {
    const port = freeLoopbackPort();
    const env = Deno.env.toObject();
    delete env.DENO_NO_PACKAGE_JSON; // as a Deno user's shell has it
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "task",
        "dev",
        `--namespaces=${namespace}`,
        `--health-port=${port}`,
        "--bind-address=127.0.0.1",
      ],
      cwd: ROOT,
      // A $KUBECONFIG list whose first file does not exist: the operator reads the list itself.
      env: {
        ...env,
        KUBECONFIG: `${ROOT}.cluster/no-such-kubeconfig:${kubeconfig}`,
        NO_COLOR: "1",
      },
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      detached: true, // its own process group: deno task, hack/dev.ts and the operator
    }).spawn();
    const log: string[] = [];
    const decoder = new TextDecoder();
    const read = async (stream: ReadableStream<Uint8Array>) => {
      for await (const chunk of stream) log.push(decoder.decode(chunk, { stream: true }));
    };
    const reading = Promise.all([read(child.stdout), read(child.stderr)]);
    let running = true;
    const exited = child.status.then(async (s) => {
      if (!running) return;
      await reading;
      throw new Error(`deno task dev exited with ${s.code}:\n${log.join("")}`);
    });
    try {
      await Promise.race([
        exited,
        eventually(async () => {
          const res = await fetch(`http://127.0.0.1:${port}/readyz`);
          await res.body?.cancel();
          assert.equal(res.status, 200);
        }, { timeoutMs: 60_000, intervalMs: 250 }),
      ]);
      const text = log.join("");
      assert.match(text, /caches synced/);
      // The compile task's permissions, and no --kubeconfig: $KUBECONFIG is the operator's to read.
      const launch = text.split("\n").find((l) => l.startsWith("[dev] deno run "));
      assert.ok(launch, text);
      assert.match(launch, / --allow-net --allow-read --allow-env --allow-sys=hostname /);
      assert.doesNotMatch(launch, /--kubeconfig|-A |--allow-all/);
    } finally {
      running = false;
      // SIGTERM to the group, as a terminal's Ctrl-C reaches all of it; SIGKILL after 30 s.
      await stopGroups([child.pid], 30_000);
      await exited.catch(() => {}); // its error, if any, is the one thrown above
      await reading;
    }
    assert.deepEqual(groupMembers(child.pid), [], "nothing of deno task dev is left");
    assert.match(log.join(""), /signal received; shutting down/);
  },
  { timeoutMs: 120_000 },
);
