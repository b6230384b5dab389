/** The fault proxy's reading of API paths and the Status answers it makes up. */

export function closeQuietly(c: { close(): void }): void {
  try {
    c.close();
  } catch {
    // already closed
  }
}

/** "/api/v1/namespaces/ns/configmaps/x" → resource configmaps, namespace ns, name x. */
export function parsePath(
  path: string,
): { resource: string; namespace?: string; name?: string; subresource?: string } {
  const parts = path.split("/").filter((p) => p !== "");
  let rest: string[];
  if (parts[0] === "api") rest = parts.slice(2);
  else if (parts[0] === "apis") rest = parts.slice(3);
  else return { resource: "" };
  let namespace: string | undefined;
  if (rest[0] === "namespaces" && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  return { resource: rest[0] ?? "", namespace, name: rest[1], subresource: rest[2] };
}

/** Lists are the same list when path and selectors match (pagination ignored). */
export function listKey(url: URL): string {
  const q = new URLSearchParams(url.search);
  for (const k of ["continue", "limit", "resourceVersion", "resourceVersionMatch"]) q.delete(k);
  q.sort();
  return `${url.pathname}?${q}`;
}

/** A watch stream: the collection and selectors, not the per-request resume point or timeout. */
export function streamKey(url: URL): string {
  const q = new URLSearchParams();
  for (const k of ["labelSelector", "fieldSelector"]) {
    const v = url.searchParams.get(k);
    if (v) q.set(k, v);
  }
  return `${url.pathname}?${q}`;
}

const REASONS: Record<number, string> = {
  409: "Conflict",
  410: "Expired",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

export function statusBody(code: number, reason?: string, message?: string) {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: message ?? `fault proxy: injected ${code}`,
    reason: reason ?? REASONS[code] ?? "Unknown",
    code,
  };
}

export function statusResponse(code: number, reason?: string, retryAfter?: number): Response {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (retryAfter !== undefined) headers["retry-after"] = String(retryAfter);
  return new Response(JSON.stringify(statusBody(code, reason)), { status: code, headers });
}
