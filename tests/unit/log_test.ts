import assert from "node:assert/strict";
import { ApiError } from "../../runtime/client/errors.ts";
import { Logger, parseFormat, parseLevel, redact } from "../../runtime/core/log.ts";

const NOW = () => new Date("2025-01-02T03:04:05.678Z");

function capture(opts: ConstructorParameters<typeof Logger>[0] = {}) {
  const lines: string[] = [];
  const log = new Logger({ now: NOW, write: (l) => lines.push(l), ...opts });
  return { log, lines };
}

Deno.test("log: JSON format writes one object per line with bound fields", () => {
  const { log, lines } = capture({ level: "info", format: "json" });
  const child = log.child({ controller: "minicluster" }).child({ key: "ns/a" });
  child.info("reconciled", { durationMs: 12 });
  log.debug("hidden");
  assert.equal(lines.length, 1);
  assert.equal(
    lines[0],
    '{"ts":"2025-01-02T03:04:05.678Z","level":"info","msg":"reconciled",' +
      '"controller":"minicluster","key":"ns/a","durationMs":12}',
  );
});

Deno.test("log: text format is key=value, quoting only where needed", () => {
  const { log, lines } = capture({ level: "debug", format: "text" });
  log.debug("watch restarted", {
    kind: "jobs.batch",
    reason: "stream closed by server",
    rv: "",
    n: 3,
    labels: { a: "b" },
    skipped: undefined,
  });
  log.error("apply failed", { error: new Error('boom "x"') });
  assert.deepEqual(lines, [
    '2025-01-02T03:04:05.678Z DEBUG watch restarted kind=jobs.batch reason="stream closed by server" rv="" n=3 labels={"a":"b"}',
    '2025-01-02T03:04:05.678Z ERROR apply failed error="boom \\"x\\""',
  ]);
});

Deno.test("log: levels filter and parse", () => {
  const { log, lines } = capture({ level: "warn" });
  log.info("no");
  log.warn("yes");
  log.error("yes");
  assert.equal(lines.length, 2);
  assert.equal(log.enabled("debug"), false);
  assert.equal(parseLevel("WARNING"), "warn");
  assert.equal(parseLevel("debug"), "debug");
  assert.throws(() => parseLevel("trace"), /invalid log level/);
  assert.equal(parseFormat("text"), "text");
  assert.throws(() => parseFormat("xml"), /invalid log format/);
});

Deno.test("log: errors keep name, message, code and reason; bigints and cycles are safe", () => {
  const { log, lines } = capture();
  const err = new ApiError({ code: 409, reason: "Conflict", message: "stale" }, "PUT /x");
  log.error("failed", { error: err, big: 10n });
  const rec = JSON.parse(lines[0]);
  assert.deepEqual(rec.error, {
    name: "ApiError",
    message: "PUT /x: 409 Conflict: stale",
    code: 409,
    reason: "Conflict",
  });
  assert.equal(rec.big, "10");
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  log.info("cycle", { cyclic });
  assert.match(JSON.parse(lines[1]).logError, /unserializable/);
});

Deno.test("log: Secret data never reaches the output", () => {
  const secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: "curve",
      annotations: { "kubectl.kubernetes.io/last-applied-configuration": '{"data":"x"}' },
    },
    data: { "curve.cert": btoa("private key material") },
    stringData: { token: "hunter2" },
  };
  for (const format of ["json", "text"] as const) {
    const { log, lines } = capture({ format });
    log.info("applied", { object: secret, nested: { list: [secret] } });
    const out = lines.join("\n");
    assert.doesNotMatch(out, /hunter2|private|cHJpdmF0ZSBrZXkgbWF0ZXJpYWw/);
    assert.match(out, /curve\.cert/, "keys stay visible");
  }
  const r = redact(secret);
  assert.deepEqual(r.data, { "curve.cert": "<redacted>" });
  assert.deepEqual(r.stringData, { token: "<redacted>" });
  assert.equal(secret.stringData.token, "hunter2", "the input is not mutated");
  const cm = { kind: "ConfigMap", data: { a: "b" } };
  assert.equal(redact(cm), cm);
});
