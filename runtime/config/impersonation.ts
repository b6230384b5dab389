/**
 * A kubeconfig user's impersonation (`as`, `as-uid`, `as-groups`, `as-user-extra`) as the
 * Impersonate-* headers of every request.
 */
import type { Impersonation } from "./kubeconfig.ts";

/**
 * The headers of an impersonation, as client-go sends them: one Impersonate-Group per group and
 * one Impersonate-Extra-<name> per value, the name percent-encoded where a header name may not
 * hold the character.
 */
export function impersonationHeaders(
  impersonate: Impersonation | undefined,
): [string, string][] {
  if (!impersonate) return [];
  const headers: [string, string][] = [["Impersonate-User", impersonate.user]];
  if (impersonate.uid) headers.push(["Impersonate-Uid", impersonate.uid]);
  for (const group of impersonate.groups) headers.push(["Impersonate-Group", group]);
  for (const [name, values] of Object.entries(impersonate.extra)) {
    for (const value of values) {
      headers.push([`Impersonate-Extra-${headerNameEscape(name)}`, value]);
    }
  }
  return headers;
}

/** `name` with every byte a header name may not hold (RFC 9110 token) percent-encoded. */
function headerNameEscape(name: string): string {
  let out = "";
  for (const byte of new TextEncoder().encode(name)) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9!#$&'*+.^_`|~-]/.test(c)
      ? c
      : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
