// The cluster's certificates, made with the `openssl` CLI: one CA that signs the serving
// certificate (kube-apiserver, and the secure ports of the controller manager and scheduler),
// the admin client certificate (O=system:masters, so RBAC lets it do anything) and a separate
// key pair that signs ServiceAccount tokens; and the aggregation layer's front proxy: a CA of its
// own (kube-apiserver's --requestheader-client-ca-file, which must not be the client CA, or every
// client certificate could claim any user through the headers) and the client certificate the
// apiserver shows aggregated API servers (metrics-server, KEDA). P-256 keys: fast to generate, accepted everywhere
// (Go's crypto/tls, rustls in Deno's fetch, kube-apiserver's ES256 token signer).

import { join } from "node:path";

export interface Pki {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  adminCert: string;
  adminKey: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
  frontProxyCaCert: string;
  frontProxyCaKey: string;
  frontProxyClientCert: string;
  frontProxyClientKey: string;
}

/** The name in the front proxy's client certificate (--requestheader-allowed-names). */
export const FRONT_PROXY_CLIENT_NAME = "front-proxy-client";

export function pkiFiles(dir: string): Pki {
  const f = (name: string) => join(dir, name);
  return {
    caCert: f("ca.crt"),
    caKey: f("ca.key"),
    servingCert: f("serving.crt"),
    servingKey: f("serving.key"),
    adminCert: f("admin.crt"),
    adminKey: f("admin.key"),
    serviceAccountKey: f("sa.key"),
    serviceAccountPub: f("sa.pub"),
    frontProxyCaCert: f("front-proxy-ca.crt"),
    frontProxyCaKey: f("front-proxy-ca.key"),
    frontProxyClientCert: f("front-proxy-client.crt"),
    frontProxyClientKey: f("front-proxy-client.key"),
  };
}

/** Names under which in-cluster clients and loopback clients reach the apiserver. */
function servingSubjectAltNames(serviceIp: string): string[] {
  return [
    "IP:127.0.0.1",
    `IP:${serviceIp}`,
    "DNS:localhost",
    "DNS:kubernetes",
    "DNS:kubernetes.default",
    "DNS:kubernetes.default.svc",
    "DNS:kubernetes.default.svc.cluster.local",
  ];
}

async function openssl(args: string[]): Promise<void> {
  const out = await new Deno.Command("openssl", { args, stdin: "null" }).output();
  if (!out.success) {
    throw new Error(`openssl ${args[0]} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
}

const newKey = (path: string) =>
  openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path]);

function randomSerial(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] &= 0x7f; // positive
  return "0x" + [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A CA's certificate and key. */
interface Signer {
  caCert: string;
  caKey: string;
}

/** Signs a fresh key's certificate with a CA; `extensions` is an openssl extfile body. */
async function issue(
  pki: Signer,
  keyPath: string,
  certPath: string,
  subject: string,
  extensions: string,
): Promise<void> {
  await newKey(keyPath);
  const csr = `${certPath}.csr`;
  const ext = `${certPath}.ext`;
  await Deno.writeTextFile(ext, extensions);
  await openssl(["req", "-new", "-key", keyPath, "-subj", subject, "-out", csr]);
  await openssl([
    "x509",
    "-req",
    "-in",
    csr,
    "-CA",
    pki.caCert,
    "-CAkey",
    pki.caKey,
    "-set_serial",
    randomSerial(),
    "-days",
    "3650",
    "-extfile",
    ext,
    "-out",
    certPath,
  ]);
  await Deno.remove(csr);
  await Deno.remove(ext);
}

const leaf = (usage: string) =>
  `basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=${usage}\n`;

export interface LeafCert {
  cert: string;
  key: string;
}

/**
 * A further certificate signed by the cluster CA, written as `<name>.crt`/`<name>.key` beside
 * the others: the real nodes' kubelet client and serving certificates and kube-proxy's. The
 * cluster has no CSR signer; certificates signed by the CA directly are what the apiserver and
 * kubelets trust.
 */
export async function issueLeaf(
  dir: string,
  name: string,
  opts: { subject: string; usage: "clientAuth" | "serverAuth"; subjectAltNames?: string[] },
): Promise<LeafCert> {
  const pki = pkiFiles(dir);
  const out = { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
  const sans = opts.subjectAltNames?.length
    ? `subjectAltName=${opts.subjectAltNames.join(",")}\n`
    : "";
  await issue(pki, out.key, out.cert, opts.subject, leaf(opts.usage) + sans);
  return out;
}

/** A new self-signed CA. */
async function newCa(ca: Signer, subject: string): Promise<void> {
  await newKey(ca.caKey);
  await openssl([
    "req",
    "-x509",
    "-new",
    "-key",
    ca.caKey,
    "-subj",
    subject,
    "-days",
    "3650",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
    "-out",
    ca.caCert,
  ]);
}

/**
 * The front proxy's CA and client certificate, made when missing: a cluster directory made before
 * the aggregation layer was configured gets them when its apiserver is restarted with its flags.
 */
export async function ensureFrontProxyPki(dir: string): Promise<void> {
  const pki = pkiFiles(dir);
  if (await Deno.stat(pki.frontProxyClientCert).then(() => true, () => false)) return;
  const ca = { caCert: pki.frontProxyCaCert, caKey: pki.frontProxyCaKey };
  await newCa(ca, "/CN=minicluster-front-proxy-ca");
  await issue(
    ca,
    pki.frontProxyClientKey,
    pki.frontProxyClientCert,
    `/CN=${FRONT_PROXY_CLIENT_NAME}`,
    leaf("clientAuth"),
  );
}

/** Creates every key and certificate in `dir` (which must exist). */
export async function createPki(dir: string, serviceIp: string): Promise<Pki> {
  const pki = pkiFiles(dir);
  await newCa(pki, "/CN=minicluster-local-ca");
  await Promise.all([
    issue(
      pki,
      pki.servingKey,
      pki.servingCert,
      "/CN=kube-apiserver",
      leaf("serverAuth") + `subjectAltName=${servingSubjectAltNames(serviceIp).join(",")}\n`,
    ),
    issue(
      pki,
      pki.adminKey,
      pki.adminCert,
      "/O=system:masters/CN=minicluster-admin",
      leaf("clientAuth"),
    ),
    newKey(pki.serviceAccountKey).then(() =>
      openssl(["pkey", "-in", pki.serviceAccountKey, "-pubout", "-out", pki.serviceAccountPub])
    ),
    ensureFrontProxyPki(dir),
  ]);
  return pki;
}
