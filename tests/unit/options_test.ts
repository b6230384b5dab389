// The flags of the operator (controllers/minicluster/operator_flags.ts) on the runtime's flag
// parser (runtime/options.ts), which knows only the manager's own.
import assert from "node:assert/strict";
import {
  envName,
  helpText,
  managerFlags,
  OptionsError,
  parseDuration,
  parseFlags,
} from "../../runtime/options.ts";
import { FLAGS, parseOptions } from "../../controllers/minicluster/operator_flags.ts";
import { FIRST_STATUS_DELAY } from "../../controllers/minicluster/timing.ts";
import { RUNTIME_MECHANISMS } from "../../runtime/pacing/pacing.ts";

Deno.test("options: defaults", () => {
  const o = parseOptions([]);
  assert.deepEqual(o.namespaces, []);
  assert.equal(o.concurrency, 4);
  assert.equal(o.leaderElect, false);
  assert.equal(o.leaderElectionId, "minicluster-operator");
  assert.equal(o.leaseDurationMs, 15_000);
  assert.equal(o.renewDeadlineMs, 10_000);
  assert.equal(o.retryPeriodMs, 2_000);
  assert.equal(o.logLevel, "info");
  assert.equal(o.logFormat, "json");
  assert.equal(o.healthPort, 8081);
  assert.equal(o.resyncPeriodMs, 3_600_000);
  assert.equal(o.cacheSyncTimeoutMs, 120_000);
  assert.equal(o.failOnForbidden, true);
  assert.equal(o.kubeconfig, undefined);
  assert.equal(o.apiTransport, "auto");
});

Deno.test("options: flags in both spellings, booleans and lists", () => {
  const o = parseOptions([
    "--kubeconfig",
    "/k",
    "--namespaces=a, b,,c",
    "--concurrency=8",
    "--leader-elect",
    "--lease-duration=3s",
    "--renew-deadline",
    "2s",
    "--retry-period=500ms",
    "--log-format=text",
    "--log-level=debug",
    "--no-fail-on-forbidden",
  ]);
  assert.equal(o.kubeconfig, "/k");
  assert.deepEqual(o.namespaces, ["a", "b", "c"]);
  assert.equal(o.concurrency, 8);
  assert.equal(o.leaderElect, true);
  assert.equal(o.leaseDurationMs, 3000);
  assert.equal(o.renewDeadlineMs, 2000);
  assert.equal(o.retryPeriodMs, 500);
  assert.equal(o.logFormat, "text");
  assert.equal(o.logLevel, "debug");
  assert.equal(o.failOnForbidden, false);
  assert.equal(parseOptions(["--leader-elect=false"]).leaderElect, false);
  assert.equal(parseOptions(["-h"]).help, true);
});

Deno.test("options: environment variables, overridden by flags", () => {
  const env = {
    OPERATOR_CONCURRENCY: "2",
    OPERATOR_LEADER_ELECT: "true",
    OPERATOR_NAMESPACES: "x,y",
    OPERATOR_LOG_FORMAT: "text",
  };
  const o = parseOptions(["--concurrency=3"], env);
  assert.equal(o.concurrency, 3);
  assert.equal(o.leaderElect, true);
  assert.deepEqual(o.namespaces, ["x", "y"]);
  assert.equal(o.logFormat, "text");
  assert.equal(envName("lease-duration"), "OPERATOR_LEASE_DURATION");
});

Deno.test("options: durations", () => {
  assert.equal(parseDuration("15s"), 15_000);
  assert.equal(parseDuration("250ms"), 250);
  assert.equal(parseDuration("1h30m"), 5_400_000);
  assert.equal(parseDuration("1.5s"), 1500);
  assert.equal(parseDuration("10"), 10_000);
  assert.throws(() => parseDuration("10x"), OptionsError);
  assert.throws(() => parseDuration(""), OptionsError);
});

Deno.test("options: bad input gets a message naming the flag", () => {
  const bad: [string[], RegExp][] = [
    [["--nope"], /unknown flag --nope/],
    [["positional"], /unexpected argument/],
    [["--concurrency"], /needs a value/],
    [["--concurrency=0"], /at least 1/],
    [["--concurrency=x"], /--concurrency: invalid integer/],
    [["--log-format=xml"], /--log-format: invalid log format/],
    [["--log-level=loud"], /--log-level/],
    [["--leader-elect=maybe"], /--leader-elect: invalid boolean/],
    [["--lease-duration=5s"], /greater than --renew-deadline/],
    [["--renew-deadline=2s"], /greater than --retry-period/],
    [["--no-concurrency"], /not a boolean/],
    [["--lease-duration=soon"], /--lease-duration: invalid duration/],
    [["--kubeconfig="], /--kubeconfig: empty path/],
  ];
  for (const [args, message] of bad) {
    assert.throws(() => parseOptions(args), (e: Error) => {
      assert.ok(e instanceof OptionsError, `${args}: ${e}`);
      assert.match(e.message, message);
      return true;
    });
  }
});

Deno.test("options: --help documents every flag with its env var and default", () => {
  const help = helpText("op", "Does things.", FLAGS);
  assert.match(help, /^Usage: op \[flags\]\n\nDoes things\.\n/);
  for (const f of FLAGS) {
    assert.ok(help.includes(`--${f.name}`), f.name);
    assert.ok(help.includes(envName(f.name)), f.name);
  }
  assert.match(help, /--lease-duration=duration\n.*\(default 15s\)/);
});

Deno.test("options: a flag with choices takes each of them and refuses anything else", () => {
  const withChoices = FLAGS.filter((f) => f.choices && f.kind === "string");
  assert.deepEqual(withChoices.map((f) => f.name), [
    "api-transport",
    "pod-security",
    "inline-curve-cert",
    "flux-view-mount",
  ]);
  for (const f of withChoices) {
    for (const choice of f.choices!) {
      assert.equal(parseOptions([`--${f.name}=${choice}`])[f.key], choice);
    }
    assert.ok(f.choices!.includes(f.default!), `${f.name}: its default is a choice`);
    assert.throws(
      () =>
        parseOptions([], { [`OPERATOR_${f.name.toUpperCase().replaceAll("-", "_")}`]: "bogus" }),
      new RegExp(`--${f.name}: "bogus" is not one of ${f.choices!.join(", ")}`),
    );
  }
});

Deno.test("options: the runtime parses the manager's flags; the operator adds its own eight", () => {
  const manager = managerFlags("some-operator");
  const own = FLAGS.filter((f) => !manager.some((m) => m.name === f.name)).map((f) => f.name);
  assert.deepEqual(own, [
    "writes-in-flight-during-bursts",
    "status-progress-interval",
    "child-event-batch",
    "pod-security",
    "inline-curve-cert",
    "flux-view-mount",
    "custom-metrics-port",
    "custom-metrics-service",
  ]);
  assert.deepEqual(
    FLAGS.filter((f) => !own.includes(f.name)).map((f) => f.name),
    manager.map((f) => f.name),
    "the manager's flags keep their order",
  );
  assert.equal(parseFlags(manager, []).leaderElectionId, "some-operator");
  assert.throws(
    () => parseFlags(manager, ["--pod-security=baseline"]),
    /unknown flag --pod-security/,
  );
  assert.throws(
    () => parseFlags(manager, ["--lease-duration=5s"]),
    /greater than --renew-deadline/,
  );
});

Deno.test("options: --pacing-off takes a list of the runtime's mechanisms and the operator's own", () => {
  assert.deepEqual(parseOptions([]).pacingOff, [], "every mechanism on by default");
  const pacingOff = FLAGS.find((f) => f.name === "pacing-off")!;
  assert.deepEqual(pacingOff.choices, [...RUNTIME_MECHANISMS, FIRST_STATUS_DELAY]);
  assert.deepEqual(
    parseOptions(["--pacing-off=own-writes, first-status-delay"]).pacingOff,
    ["own-writes", "first-status-delay"],
  );
  assert.deepEqual(
    parseOptions([], { OPERATOR_PACING_OFF: "relist-budget" }).pacingOff,
    ["relist-budget"],
  );
  assert.throws(
    () => parseOptions(["--pacing-off=own-writes,everything"]),
    /--pacing-off: "everything" is not one of write-slots, burst-yield, /,
  );
  assert.throws(
    () => parseFlags(managerFlags("x"), ["--pacing-off=first-status-delay"]),
    /"first-status-delay" is not one of/,
    "a runtime alone knows only its own mechanisms",
  );
});
