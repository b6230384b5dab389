/**
 * The serving certificate of an aggregated API server, kept in a Secret so that every replica
 * serves the same one, and its CA published in the APIService's caBundle so that the API server
 * verifies whom it calls (no insecureSkipTLSVerify).
 *
 * The first replica to find no Secret makes a CA and a certificate for the Service's DNS names
 * (P-256, ten years: nothing outside the cluster trusts this CA, and the Secret is the only copy
 * of its key) and creates the Secret; a replica that loses that race reads the winner's. A Secret
 * that no longer covers the Service's names, or expires within 30 days, is made again.
 */
import * as x509 from "@peculiar/x509";
import type { ApiClient } from "../client/api_client.ts";
import { isAlreadyExists, isConflict } from "../client/errors.ts";
import { getOrUndefined } from "../client/get_or_undefined.ts";
import { resourceType, Secrets } from "../client/resources.ts";

export const APIServices = resourceType(
  "apiregistration.k8s.io",
  "v1",
  "apiservices",
  "APIService",
  false,
);

export interface ServingCert {
  certPem: string;
  keyPem: string;
  caPem: string;
}

/** Keys of the Secret: the usual kubernetes.io/tls pair and the CA that signed it. */
const CERT = "tls.crt";
const KEY = "tls.key";
const CA = "ca.crt";

const ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
const DAY_MS = 86_400_000;
const LIFETIME_MS = 3650 * DAY_MS;
const RENEW_BEFORE_MS = 30 * DAY_MS;

/** The DNS names a Service answers to inside the cluster. */
export function serviceDnsNames(namespace: string, service: string): string[] {
  return [
    service,
    `${service}.${namespace}`,
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.cluster.local`,
  ];
}

/** A CA and a serving certificate it signed for `dnsNames`. */
export async function makeServingCert(dnsNames: readonly string[], now = new Date()): Promise<
  ServingCert
> {
  const notAfter = new Date(now.getTime() + LIFETIME_MS);
  const caKeys = await crypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: `CN=${dnsNames[0]}-ca`,
    notBefore: now,
    notAfter,
    signingAlgorithm: ALGORITHM,
    keys: caKeys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
    ],
  });
  const keys = await crypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: `CN=${dnsNames[dnsNames.length - 1]}`,
    issuer: ca.subject,
    notBefore: now,
    notAfter,
    signingAlgorithm: ALGORITHM,
    publicKey: keys.publicKey,
    signingKey: caKeys.privateKey,
    extensions: [
      new x509.SubjectAlternativeNameExtension(
        dnsNames.map((value) => ({ type: "dns" as const, value })),
      ),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    ],
  });
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  return {
    certPem: cert.toString("pem") + "\n",
    keyPem: x509.PemConverter.encode(pkcs8.buffer, "PRIVATE KEY") + "\n",
    caPem: ca.toString("pem") + "\n",
  };
}

function randomSerial(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] &= 0x7f; // a positive integer
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Why a stored certificate must be made again, or undefined when it serves `dnsNames`. */
export function staleReason(
  stored: ServingCert,
  dnsNames: readonly string[],
  now = new Date(),
): string | undefined {
  const cert = new x509.X509Certificate(stored.certPem);
  if (cert.notAfter.getTime() - now.getTime() < RENEW_BEFORE_MS) {
    return `it expires ${cert.notAfter.toISOString()}`;
  }
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  const names = new Set(san?.names.items.map((n) => n.value) ?? []);
  const missing = dnsNames.filter((n) => !names.has(n));
  if (missing.length) return `it does not name ${missing.join(", ")}`;
  return undefined;
}

interface SecretObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace: string; resourceVersion?: string; labels?: object };
  type?: string;
  data?: Record<string, string>;
}

function fromSecret(secret: SecretObject): ServingCert | undefined {
  const d = secret.data ?? {};
  if (!d[CERT] || !d[KEY] || !d[CA]) return undefined;
  return { certPem: atob(d[CERT]), keyPem: atob(d[KEY]), caPem: atob(d[CA]) };
}

/**
 * The serving certificate stored in `namespace/secretName`, made and stored first when there is
 * none or it no longer serves `dnsNames`.
 */
export async function ensureServingCert(
  client: Pick<ApiClient, "get" | "create" | "replace">,
  namespace: string,
  secretName: string,
  dnsNames: readonly string[],
  labels: Record<string, string> = {},
): Promise<ServingCert> {
  for (let attempt = 0;; attempt++) {
    const secret = await getOrUndefined<SecretObject>(client, Secrets, namespace, secretName);
    const stored = secret ? fromSecret(secret) : undefined;
    if (stored && staleReason(stored, dnsNames) === undefined) return stored;
    const made = await makeServingCert(dnsNames);
    const object: SecretObject = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: secretName,
        namespace,
        labels,
        ...(secret ? { resourceVersion: secret.metadata.resourceVersion } : {}),
      },
      type: "kubernetes.io/tls",
      data: { [CERT]: btoa(made.certPem), [KEY]: btoa(made.keyPem), [CA]: btoa(made.caPem) },
    };
    try {
      if (secret) await client.replace(Secrets, object);
      else await client.create(Secrets, object);
      return made;
    } catch (e) {
      // Another replica wrote first: serve what it stored.
      if (attempt < 3 && (isAlreadyExists(e) || isConflict(e))) continue;
      throw e;
    }
  }
}

/** Puts `caPem` into the APIService's caBundle unless it is there already. */
export async function publishCaBundle(
  client: Pick<ApiClient, "get" | "patch">,
  apiService: string,
  caPem: string,
): Promise<"published" | "unchanged"> {
  const current = await client.get<{ spec?: { caBundle?: string } }>(
    APIServices,
    undefined,
    apiService,
  );
  const wanted = btoa(caPem);
  if (current.spec?.caBundle === wanted) return "unchanged";
  await client.patch(APIServices, undefined, apiService, { spec: { caBundle: wanted } }, "merge");
  return "published";
}
