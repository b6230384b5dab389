/** `deno task dev` (hack/dev.ts): which kubeconfig the operator gets, and with which flags. */
import assert from "node:assert/strict";
import { devArgs, kubeconfigArgs } from "../../hack/dev.ts";
import { compilePermissions } from "../../hack/permissions.ts";

const DENO_JSON = Deno.readTextFileSync(new URL("../../deno.json", import.meta.url));

Deno.test("dev: $KUBECONFIG, else the local cluster's kubeconfig, else the operator's defaults", () => {
  const local = "/repo/.cluster/kubeconfig";
  // $KUBECONFIG (a list, maybe) is read by the operator itself: no flag.
  assert.deepEqual(kubeconfigArgs({ KUBECONFIG: "/a:/b" }, local, true), []);
  assert.deepEqual(kubeconfigArgs({ KUBECONFIG: "" }, local, true), [`--kubeconfig=${local}`]);
  assert.deepEqual(kubeconfigArgs({}, local, true), [`--kubeconfig=${local}`]);
  // Neither: in-cluster or ~/.kube/config, as the operator decides.
  assert.deepEqual(kubeconfigArgs({}, local, false), []);
});

Deno.test("dev: the operator runs with the compile task's flags and --allow-run (exec plugins); the caller's flags come last", () => {
  const args = devArgs(DENO_JSON, ["--kubeconfig=/k"], ["--log-format=json", "--namespaces=a"]);
  const permissions = compilePermissions(DENO_JSON);
  assert.deepEqual(args.slice(0, permissions.length + 2), ["run", ...permissions, "--allow-run"]);
  assert.match(args[permissions.length + 2], /\/mod\.ts$/);
  assert.deepEqual(args.slice(permissions.length + 3), [
    "--kubeconfig=/k",
    "--log-format=text",
    "--log-format=json",
    "--namespaces=a",
  ]);
});

Deno.test("dev: the task is the launcher, with no shell expansion left to deno task", () => {
  const task: string = JSON.parse(DENO_JSON).tasks.dev;
  assert.match(task, /hack\/dev\.ts$/);
  assert.doesNotMatch(task, /\$\{/);
});
