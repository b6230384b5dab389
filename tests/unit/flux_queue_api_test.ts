/**
 * spec.flux.queueReport: its defaults, what the CRD refuses (offline, api/crd_validation.ts) and
 * what the semantic checks refuse (api/validate.ts), each with its message.
 */
import assert from "node:assert/strict";
import { applyErrors } from "../../api/crd_validation.ts";
import {
  MINICLUSTER_SCHEMA,
  MINICLUSTER_SPEC_REPLICAS_PATH,
} from "../../api/minicluster_schema.ts";
import { type MiniCluster, validateSpec, withDefaults } from "../../api/mod.ts";

const check = (mc: unknown) => applyErrors(mc, MINICLUSTER_SCHEMA, MINICLUSTER_SPEC_REPLICAS_PATH);

function mc(flux: Record<string, unknown>, containers?: unknown[]): MiniCluster {
  return {
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name: "q", namespace: "ns" },
    spec: {
      size: 2,
      containers: (containers ?? [{ image: "i", command: "sleep 1" }]) as never,
      flux,
    },
  };
}

Deno.test("queueReport: {} turns it on with port 8060 and 30 s; absent, nothing", () => {
  assert.deepEqual(withDefaults(mc({ queueReport: {} })).spec.flux.queueReport, {
    port: 8060,
    intervalSeconds: 30,
  });
  assert.deepEqual(
    withDefaults(mc({ queueReport: { port: 9000, intervalSeconds: 60 } })).spec.flux.queueReport,
    { port: 9000, intervalSeconds: 60 },
  );
  assert.equal(withDefaults(mc({})).spec.flux.queueReport, undefined);
  assert.deepEqual(check(mc({ queueReport: {} })), []);
  assert.deepEqual(validateSpec(mc({ queueReport: {} })), []);
});

Deno.test("queueReport: the CRD refuses the brokers' port, ports out of range, odd intervals and a burst target", () => {
  const refused: [Record<string, unknown>, RegExp][] = [
    [{ queueReport: { port: 8050 } }, /queueReport\.port cannot be 8050/],
    [{ queueReport: { port: 80 } }, /spec\.flux\.queueReport\.port.*1024/],
    [{ queueReport: { port: 70000 } }, /spec\.flux\.queueReport\.port.*65535/],
    [{ queueReport: { intervalSeconds: 5 } }, /spec\.flux\.queueReport\.intervalSeconds.*10/],
    [{ queueReport: { intervalSeconds: 7200 } }, /intervalSeconds.*3600/],
    [
      {
        queueReport: {},
        bursting: { leadBroker: { address: "10.0.0.1", name: "lead", size: 2 } },
      },
      /queueReport cannot be combined with bursting\.leadBroker/,
    ],
  ];
  for (const [flux, message] of refused) {
    const errors = check(mc(flux));
    assert.ok(errors.some((e) => message.test(e)), `${JSON.stringify(flux)}: ${errors}`);
  }
});

Deno.test("queueReport: a container's port, or no Flux container, is refused with the reason", () => {
  const taken = validateSpec(
    mc({ queueReport: {} }, [
      { name: "flux", image: "i", command: "sleep 1", runFlux: true },
      { name: "web", image: "w", ports: [8060] },
    ]),
  );
  assert.deepEqual(taken, [
    "spec.flux.queueReport.port 8060 is also a port of spec.containers[1]; the queue reporter listens on it in the lead broker's pod: choose another port",
  ]);
  const noFlux = validateSpec(
    mc({ queueReport: {} }, [{ name: "a", image: "i" }, { name: "b", image: "i" }]),
  );
  assert.ok(noFlux.some((p) => /needs a container that runs Flux/.test(p)), String(noFlux));
});
