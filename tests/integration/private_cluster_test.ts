// A private cluster whose owning process was killed (no unload handler ran) is stopped and removed
// by the next run's sweep; one whose owner lives is left alone. Runs a real control plane.
import assert from "node:assert/strict";
import { join } from "node:path";
import { groupMembers } from "../../hack/cluster/processes.ts";
import { OWNER_FILE, sweepAbandoned } from "../../testing/private_cluster.ts";

const MODULE = new URL("../../testing/private_cluster.ts", import.meta.url).href;

/** A component runs while its process group has a live (non-zombie) member. */
const running = (pid: number) => groupMembers(pid).length > 0;

Deno.test({
  name: "private clusters: a killed owner's cluster is swept by the next run, a live one's is not",
  sanitizeResources: false,
  async fn() {
    const tmp = Deno.env.get("TMPDIR") || "/tmp";
    const prefix = `minicluster-sweep-test-${crypto.randomUUID().slice(0, 8)}-`;
    const script = `import { startPrivateCluster } from ${JSON.stringify(MODULE)};
      await startPrivateCluster({ prefix: ${JSON.stringify(prefix)}, controlPlaneOnly: true });
      console.log("ready");
      await new Promise(() => {});`;
    const owner = new Deno.Command(Deno.execPath(), {
      args: ["eval", script],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).spawn();
    try {
      const reader = owner.stdout.pipeThrough(new TextDecoderStream()).getReader();
      let out = "";
      while (!out.includes("ready")) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the owner exited before its cluster was ready: ${out}`);
        out += value;
      }
      reader.releaseLock();
      const [dir] = [...Deno.readDirSync(tmp)].filter((e) => e.name.startsWith(prefix));
      assert.ok(dir, "the private cluster's directory");
      const owned = join(tmp, dir.name);
      assert.equal(
        Deno.readTextFileSync(join(owned, OWNER_FILE)).trim(),
        String(owner.pid),
        "the owner file survives `up`",
      );
      const state = JSON.parse(Deno.readTextFileSync(join(owned, "cluster", "state.json")));
      const pids = Object.values(state.pids as Record<string, number>);
      assert.ok(pids.length >= 2 && pids.every(running), "etcd and the apiserver run");

      assert.deepEqual(sweepAbandoned(prefix, tmp), [], "the owner lives: left alone");
      assert.ok(pids.every(running));

      owner.kill("SIGKILL");
      await owner.status;
      assert.ok(pids.every(running), "abandoned: nobody stopped it");
      assert.deepEqual(sweepAbandoned(prefix, tmp), [owned]);
      assert.ok(!pids.some(running), "its processes are stopped");
      assert.throws(() => Deno.statSync(owned), Deno.errors.NotFound, "its directory is removed");
    } finally {
      try {
        owner.kill("SIGKILL");
      } catch {
        // already gone
      }
      await owner.status;
      sweepAbandoned(prefix, tmp);
    }
  },
});
