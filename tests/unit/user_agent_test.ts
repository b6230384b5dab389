// Who the API server sees: the operator's client introduces itself as the operator (mod.ts hands
// the runtime its name), a client of the bare runtime as the runtime, which knows no program.
import assert from "node:assert/strict";
import { createOperator } from "../../mod.ts";
import { parseOptions } from "../../controllers/minicluster/operator_flags.ts";
import { Manager } from "../../runtime/manager.ts";
import { tokenKubeconfig } from "./token_kubeconfig.ts";

/** The User-Agent of one request of `connect`'s client to a server that echoes it. */
async function userAgentOf(connect: (kubeconfig: string) => Promise<Manager>): Promise<string> {
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    (req) => Response.json({ ua: req.headers.get("User-Agent") }),
  );
  const kubeconfig = await tokenKubeconfig(
    `http://127.0.0.1:${(server.addr as Deno.NetAddr).port}`,
  );
  const manager = await connect(kubeconfig.path);
  try {
    const answer = await manager.client.request("GET", "/api") as { ua: string };
    return answer.ua;
  } finally {
    manager.client.close();
    await server.shutdown();
    await kubeconfig.remove();
  }
}

Deno.test("user agent: the operator's client is minicluster-operator, the bare runtime's is not", async () => {
  const deno = `(deno/${Deno.version.deno})`;
  const operator = await userAgentOf((kubeconfig) =>
    createOperator(parseOptions([`--kubeconfig=${kubeconfig}`]))
  );
  assert.equal(operator, `minicluster-operator ${deno}`);
  const runtime = await userAgentOf(async (kubeconfig) => {
    const manager = new Manager(parseOptions([`--kubeconfig=${kubeconfig}`]));
    await manager.connect();
    return manager;
  });
  assert.equal(runtime, `deno-kube-client ${deno}`);
});
