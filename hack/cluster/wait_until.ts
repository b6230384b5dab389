// Waiting for an add-on of the local cluster (Kueue, metrics-server, KEDA) to answer as it must.

/**
 * Calls `check` every 2 s until it returns undefined (done) or `timeoutMs` passes; then throws
 * with `what` and the last reason `check` gave (or the error it threw).
 */
export async function waitUntil(
  what: string,
  check: () => Promise<string | undefined>,
  timeoutMs = 180_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const reason = await check();
      if (reason === undefined) return;
      last = reason;
    } catch (e) {
      last = e instanceof Error ? e.message : String(e);
    }
    await new Promise((r) => setTimeout(r, 2000));
  }
  throw new Error(`${what} in ${Math.round(timeoutMs / 1000)} s: ${last.trim()}`);
}
