import assert from "node:assert/strict";
import https from "node:https";
import { X509Certificate } from "node:crypto";
import * as x509 from "@peculiar/x509";
import {
  type FrontProxyTrust,
  parseFrontProxyTrust,
  remoteUser,
} from "../../runtime/aggregated/front_proxy.ts";
import {
  makeServingCert,
  serviceDnsNames,
  staleReason,
} from "../../runtime/aggregated/serving_cert.ts";
import { Authorizer, type RequestAttributes } from "../../runtime/aggregated/authorizer.ts";
import { startAggregatedServer } from "../../runtime/aggregated/server.ts";
import { FakeClock } from "../../runtime/core/clock.ts";

const TRUST: FrontProxyTrust = {
  caPem: "CA",
  allowedNames: ["front-proxy-client"],
  usernameHeaders: ["x-remote-user"],
  groupHeaders: ["x-remote-group"],
};

Deno.test("front proxy: the API server's request-header settings, with Kubernetes' defaults", () => {
  const trust = parseFrontProxyTrust({
    "requestheader-client-ca-file": "-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----",
    "requestheader-allowed-names": '["front-proxy-client"]',
    "requestheader-username-headers": '["X-Remote-User"]',
    "requestheader-group-headers": '["X-Remote-Group"]',
  });
  assert.deepEqual(trust.allowedNames, ["front-proxy-client"]);
  assert.deepEqual(trust.usernameHeaders, ["x-remote-user"]);
  assert.match(trust.caPem, /END CERTIFICATE-----\n$/);
  const bare = parseFrontProxyTrust({ "requestheader-client-ca-file": "PEM" });
  assert.deepEqual(bare.allowedNames, []);
  assert.deepEqual(bare.groupHeaders, ["x-remote-group"]);
  assert.throws(() => parseFrontProxyTrust({ "client-ca-file": "PEM" }), /aggregation layer/);
  assert.throws(
    () =>
      parseFrontProxyTrust({
        "requestheader-client-ca-file": "P",
        "requestheader-allowed-names": "{}",
      }),
    /not a JSON list/,
  );
});

Deno.test("front proxy: headers name a user only over the front proxy's certificate", () => {
  const headers = {
    "x-remote-user": "alice",
    "x-remote-group": ["dev", "ops, system:authenticated"],
  };
  assert.deepEqual(
    remoteUser(TRUST, { authorized: true, commonName: "front-proxy-client" }, headers),
    {
      user: "alice",
      groups: ["dev", "ops", "system:authenticated"],
    },
  );
  // A pod calling the Service directly, a certificate of another CA, another name, no user.
  assert.match(
    (remoteUser(TRUST, { authorized: false }, headers) as { refused: string }).refused,
    /request-header CA/,
  );
  assert.match(
    (remoteUser(TRUST, { authorized: true, commonName: "kubelet" }, headers) as { refused: string })
      .refused,
    /kubelet is not an allowed name/,
  );
  assert.match(
    (remoteUser(TRUST, { authorized: true, commonName: "front-proxy-client" }, {}) as {
      refused: string;
    }).refused,
    /named no user/,
  );
  // No allowed names: any certificate of the CA.
  assert.equal(
    (remoteUser({ ...TRUST, allowedNames: [] }, { authorized: true, commonName: "x" }, headers) as {
      user: string;
    }).user,
    "alice",
  );
});

Deno.test("serving certificate: a CA and a certificate for the Service's names, renewed when stale", async () => {
  const names = serviceDnsNames("ops", "metrics");
  assert.deepEqual(names, [
    "metrics",
    "metrics.ops",
    "metrics.ops.svc",
    "metrics.ops.svc.cluster.local",
  ]);
  const made = await makeServingCert(names);
  const cert = new X509Certificate(made.certPem);
  const ca = new X509Certificate(made.caPem);
  assert.ok(cert.checkIssued(ca) && cert.verify(ca.publicKey), "the CA signed the certificate");
  assert.equal(ca.ca, true);
  assert.equal(cert.ca, false);
  for (const n of names) assert.ok(cert.checkHost(n), n);
  assert.equal(staleReason(made, names), undefined);
  assert.match(staleReason(made, [...names, "other.ops.svc"])!, /does not name other\.ops\.svc/);
  assert.match(staleReason(made, names, new Date(Date.now() + 3640 * 86_400_000))!, /expires/);
});

Deno.test("authorizer: a SubjectAccessReview for the user, kept a minute when allowed, 10 s when denied", async () => {
  const clock = new FakeClock();
  const reviews: { spec: Record<string, unknown> }[] = [];
  let allow = true;
  const client = {
    create<T>(_rt: unknown, obj: T): Promise<T> {
      reviews.push(obj as { spec: Record<string, unknown> });
      return Promise.resolve({
        ...obj,
        status: { allowed: allow, reason: allow ? "RBAC: yes" : "" },
      });
    },
  };
  const authorizer = new Authorizer(client, clock);
  const who = {
    user: "system:serviceaccount:kube-system:horizontal-pod-autoscaler",
    groups: ["g"],
  };
  const attrs: RequestAttributes = {
    verb: "get",
    group: "custom.metrics.k8s.io",
    version: "v1beta2",
    resource: "things.example.com",
    subresource: "m",
    namespace: "ns",
    name: "a",
  };
  assert.deepEqual(await authorizer.authorize(who, attrs), { allowed: true, reason: "RBAC: yes" });
  assert.deepEqual(reviews[0].spec, { user: who.user, groups: ["g"], resourceAttributes: attrs });
  await authorizer.authorize(who, attrs);
  assert.equal(reviews.length, 1, "kept");
  await clock.advance(60_001);
  allow = false;
  assert.equal((await authorizer.authorize(who, attrs)).allowed, false);
  assert.equal(reviews.length, 2);
  await authorizer.authorize(who, { verb: "get", path: "/apis/custom.metrics.k8s.io/v1beta2" });
  assert.deepEqual(reviews[2].spec.nonResourceAttributes, {
    verb: "get",
    path: "/apis/custom.metrics.k8s.io/v1beta2",
  });
  await clock.advance(10_001);
  allow = true;
  assert.equal((await authorizer.authorize(who, attrs)).allowed, true, "a denial is kept 10 s");
  const failing = new Authorizer({ create: () => Promise.reject(new Error("503")) }, clock);
  assert.deepEqual(await failing.authorize(who, attrs), {
    allowed: false,
    reason: "the SubjectAccessReview failed: Error: 503",
  });
});

/** A CA of the front proxy's kind and a client certificate it signed. */
async function frontProxy(commonName: string) {
  const alg = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
  const now = new Date(Date.now() - 60_000);
  const notAfter = new Date(Date.now() + 86_400_000);
  const caKeys = await crypto.subtle.generateKey(alg, true, ["sign", "verify"]);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name: "CN=front-proxy-ca",
    notBefore: now,
    notAfter,
    signingAlgorithm: alg,
    keys: caKeys,
    extensions: [new x509.BasicConstraintsExtension(true, 0, true)],
  });
  const keys = await crypto.subtle.generateKey(alg, true, ["sign", "verify"]);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: "02",
    subject: `CN=${commonName}`,
    issuer: ca.subject,
    notBefore: now,
    notAfter,
    signingAlgorithm: alg,
    publicKey: keys.publicKey,
    signingKey: caKeys.privateKey,
    extensions: [new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth])],
  });
  const pkcs8 = await crypto.subtle.exportKey("pkcs8", keys.privateKey);
  return {
    caPem: ca.toString("pem"),
    certPem: cert.toString("pem"),
    keyPem: x509.PemConverter.encode(pkcs8, "PRIVATE KEY"),
  };
}

function get(
  port: number,
  caPem: string,
  client: { certPem: string; keyPem: string } | undefined,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: "localhost",
      port,
      path,
      ca: caPem,
      ...(client ? { cert: client.certPem, key: client.keyPem } : {}),
      headers,
    }, (res) => {
      let text = "";
      res.on("data", (c) => text += c);
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on("error", reject);
    req.end();
  });
}

Deno.test("aggregated server: TLS, the front proxy's certificate, the review, then the route", async () => {
  const serving = await makeServingCert(["localhost"]);
  const proxy = await frontProxy("front-proxy-client");
  const impostor = await frontProxy("front-proxy-client"); // the same name, another CA
  const asked: string[] = [];
  const server = await startAggregatedServer({
    port: 0,
    hostname: "127.0.0.1",
    tls: serving,
    trust: { ...TRUST, caPem: proxy.caPem },
    authorizer: {
      authorize: (who, attrs) => {
        asked.push(`${who.user}:${"path" in attrs ? attrs.path : attrs.resource}`);
        return Promise.resolve({ allowed: who.user === "hpa", reason: "RBAC" });
      },
    },
    route: (path) =>
      path === "/apis/x/v1"
        ? { attributes: { verb: "get", path }, answer: () => ({ status: 200, body: { ok: path } }) }
        : undefined,
  });
  try {
    const ok = await get(server.port, serving.caPem, proxy, "/apis/x/v1", {
      "X-Remote-User": "hpa",
    });
    assert.deepEqual(ok, { status: 200, body: { ok: "/apis/x/v1" } });
    const denied = await get(server.port, serving.caPem, proxy, "/apis/x/v1", {
      "X-Remote-User": "tenant",
    });
    assert.equal(denied.status, 403);
    assert.match(String(denied.body.message), /user "tenant" may not get \/apis\/x\/v1: RBAC/);
    for (const client of [undefined, impostor]) {
      const refused = await get(server.port, serving.caPem, client, "/apis/x/v1", {
        "X-Remote-User": "hpa",
      });
      assert.equal(refused.status, 401);
      assert.equal(refused.body.kind, "Status");
    }
    assert.equal(
      (await get(server.port, serving.caPem, proxy, "/other", { "X-Remote-User": "hpa" })).status,
      404,
    );
    assert.deepEqual(asked, ["hpa:/apis/x/v1", "tenant:/apis/x/v1"]);
  } finally {
    await server.shutdown();
  }
});
