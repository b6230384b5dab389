/**
 * Secrets hygiene: after the operator has reconciled MiniClusters with a generated CURVE
 * certificate, a given one, a broken given one, a munge key and environment variables and volumes
 * from Secrets — scaled, updated and deleted — no secret material appears anywhere but in Secrets:
 * not in ConfigMaps, Events, MiniCluster status, the other children (Job, Services, pods), nor in
 * any line the operator logged (captured at debug level), nor in the spec of a MiniCluster that
 * names its certificate's Secret (spec.flux.curveCertSecretRef).
 *
 * Secret material: the secret keys of every certificate, the munge key, the values of referenced
 * Secrets, each also base64-encoded (how Secrets hold them). The given certificates are in the
 * MiniCluster's spec because the user put them there; the spec is not scanned.
 */
import assert from "node:assert/strict";
import type { ConfigMap, Event, Pod, Secret, Service } from "kubernetes-types/core/v1.d.ts";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import {
  curveCertFromSecret,
  curveCertificateText,
  generateCurveCertificate,
  parseCurveCertificate,
} from "../../controllers/minicluster/children/curve.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import {
  ConfigMaps,
  Events,
  Jobs,
  Pods,
  Secrets,
  Services,
} from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { INLINE_CURVE_CERT_OPT_IN } from "../../controllers/minicluster/policy/curve_source.ts";
import { eventually, integrationTest } from "../harness.ts";
import { withLoggedOperator } from "../generated/logged_operator.ts";

const IMAGE = "ghcr.io/rse-ops/accounting:app-latest";

function randomText(prefix: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return `${prefix}${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

const base64 = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));

function mc(name: string, namespace: string, spec: Record<string, unknown>): MiniCluster {
  return {
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name, namespace },
    spec: { size: 2, containers: [{ image: IMAGE, command: "hostname" }], ...spec },
  } as MiniCluster;
}

integrationTest(
  "secrets hygiene: no secret material in ConfigMaps, Events, status, children or logs",
  async (env) => {
    const { client, namespace } = env;
    const token = randomText("token-");
    const mungeKey = randomText("munge-");
    const given = await generateCurveCertificate({ name: "given" });
    const broken = await generateCurveCertificate();
    // A valid secret key next to a broken public key: refused, and the refusal must not quote it.
    const brokenText = curveCertificateText("x".repeat(39), broken.secretKey);
    // Certificates by reference (spec.flux.curveCertSecretRef): one good, one Flux would refuse.
    const byRef = await generateCurveCertificate({ name: "by-ref" });
    const brokenByRef = await generateCurveCertificate();
    await client.create<Secret>(Secrets, {
      metadata: { name: "curve-certs", namespace },
      stringData: {
        "curve.cert": byRef.text,
        broken: curveCertificateText("x".repeat(39), brokenByRef.secretKey),
      },
    });

    await client.create<Secret>(Secrets, {
      metadata: { name: "app-token", namespace },
      stringData: { token },
    });
    await client.create<Secret>(Secrets, {
      metadata: { name: "munge", namespace },
      stringData: { "munge.key": mungeKey },
    });

    const lines = await withLoggedOperator(env, async (op) => {
      await client.create(
        MiniClusters,
        mc("generated", namespace, {
          flux: { mungeSecret: "munge" },
          containers: [{
            image: IMAGE,
            command: "hostname",
            secrets: { TOKEN: { name: "app-token", key: "token" } },
            volumes: { creds: { path: "/creds", secretName: "app-token" } },
          }],
        }),
      );
      await client.create(
        MiniClusters,
        mc("given", namespace, { flux: { curveCert: given.text } }),
      );
      await client.create(
        MiniClusters,
        mc("broken", namespace, { flux: { curveCert: brokenText } }),
      );
      await client.create(
        MiniClusters,
        mc("by-ref", namespace, { flux: { curveCertSecretRef: { name: "curve-certs" } } }),
      );
      await client.create(
        MiniClusters,
        mc("broken-by-ref", namespace, {
          flux: { curveCertSecretRef: { name: "curve-certs", key: "broken" } },
        }),
      );
      // A given certificate with a spec the API refuses later (the Job's env name).
      await client.create(
        MiniClusters,
        mc("refused", namespace, {
          flux: { curveCert: given.text },
          containers: [{ image: IMAGE, command: "hostname", environment: { "ÜBER": "x" } }],
        }),
      );

      const settled = async (name: string, type: string, status: string) =>
        await eventually(async () => {
          const got = await client.get<MiniCluster>(MiniClusters, namespace, name);
          const c = got.status?.conditions?.find((c) => c.type === type);
          assert.equal(got.status?.observedGeneration, got.metadata?.generation, name);
          assert.equal(c?.status, status, `${name}: ${type} ${c?.status} ${c?.message}`);
        }, { timeoutMs: 30_000, intervalMs: 200 });
      await settled("generated", "Unappliable", "False");
      await settled("given", "Unappliable", "False");
      await settled("broken", "SpecInvalid", "True");
      await settled("by-ref", "Unappliable", "False");
      await settled("broken-by-ref", "SpecInvalid", "True");
      await settled("refused", "Unappliable", "True");

      // More paths through the operator: scale, change, delete with the finalizer.
      await client.patch(MiniClusters, namespace, "generated", { spec: { size: 1 } }, "merge");
      await client.patch(MiniClusters, namespace, "given", {
        spec: { logging: { quiet: true } },
      }, "merge");
      await settled("generated", "Unappliable", "False");
      await settled("given", "Unappliable", "False");
      await client.delete(MiniClusters, namespace, "given");
      await eventually(async () => {
        try {
          await client.get(MiniClusters, namespace, "given");
        } catch (e) {
          if (isNotFound(e)) return;
          throw e;
        }
        throw new Error("MiniCluster given still exists");
      }, { timeoutMs: 60_000, intervalMs: 300 });
      assert.deepEqual(op.crashes(), []);
      return op.lines;
    });

    // The generated certificate, as the operator stored it.
    const stored = await client.get<Secret>(Secrets, namespace, "generated-curve-cert");
    const generated = parseCurveCertificate(curveCertFromSecret(stored) ?? "");
    assert.ok(!(generated instanceof Error), "the generated certificate parses");

    const needles: [string, string][] = [];
    for (
      const [what, value] of [
        ["the generated CURVE secret key", generated.secretKey],
        ["the given CURVE secret key", given.secretKey],
        ["the broken certificate's secret key", broken.secretKey],
        ["the referenced CURVE secret key", byRef.secretKey],
        ["the broken referenced certificate's secret key", brokenByRef.secretKey],
        ["the munge key", mungeKey],
        ["the referenced Secret's value", token],
      ] as const
    ) {
      needles.push([what, value], [`${what} (base64)`, base64(value)]);
    }
    needles.push(["the given certificate (base64)", base64(given.text)]);

    const haystacks: [string, string][] = [];
    const add = (what: string, value: unknown) => haystacks.push([what, JSON.stringify(value)]);
    for (const cm of (await client.list<ConfigMap>(ConfigMaps, { namespace })).items) {
      add(`ConfigMap ${cm.metadata?.name}`, cm);
    }
    for (const e of (await client.list<Event>(Events, { namespace })).items) {
      add(`Event ${e.metadata?.name}`, e);
    }
    for (const m of (await client.list<MiniCluster>(MiniClusters, { namespace })).items) {
      add(`status of MiniCluster ${m.metadata?.name}`, m.status);
      // A certificate by reference keeps the key out of the spec too.
      if (m.spec.flux?.curveCertSecretRef) add(`spec of MiniCluster ${m.metadata?.name}`, m.spec);
      add(`metadata of MiniCluster ${m.metadata?.name}`, {
        ...m.metadata,
        managedFields: undefined,
      });
    }
    for (const j of (await client.list<Job>(Jobs, { namespace })).items) {
      add(`Job ${j.metadata?.name}`, j);
    }
    for (const s of (await client.list<Service>(Services, { namespace })).items) {
      add(`Service ${s.metadata?.name}`, s);
    }
    for (const p of (await client.list<Pod>(Pods, { namespace })).items) {
      add(`Pod ${p.metadata?.name}`, p);
    }
    lines.forEach((line, i) => haystacks.push([`operator log line ${i + 1}`, line]));

    const leaks: string[] = [];
    for (const [where, text] of haystacks) {
      for (const [what, value] of needles) {
        if (text.includes(value)) leaks.push(`${what} in ${where}`);
      }
    }
    console.log(
      `secrets hygiene: ${needles.length} secret values looked for in ${haystacks.length} ` +
        `objects and log lines (${lines.length} log lines), ${leaks.length} leaks`,
    );
    assert.deepEqual(leaks, []);

    // Not vacuous: the operator did log, and did write Events about these MiniClusters.
    assert.ok(lines.length > 3, "the operator logged");
    assert.ok(haystacks.some(([w]) => w.startsWith("Event ")), "events were written");
  },
  // Given certificates inline (the Go operator's field) are among what must not leak: the
  // namespace opts in to the field the install's admission policy refuses elsewhere.
  {
    timeoutMs: 120_000,
    namespaceLabels: { [INLINE_CURVE_CERT_OPT_IN.label]: INLINE_CURVE_CERT_OPT_IN.value },
  },
);
