/**
 * The queue reporter's Python (children/scripts/queue-report.ts) run by python3 against a fake
 * `flux` package that answers as flux-core 0.88's bindings do (the RPC topics and payloads, the
 * SchedResourceList sets, job_list's arguments): what it asks Flux, what it makes of the answers,
 * and what its HTTP server serves. Ignored where python3 is missing; the real thing runs in
 * tests/real/queue_report_test.ts.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  QUEUE_REPORT_HTTP_PATH,
  QUEUE_REPORTER_PY,
} from "../../controllers/minicluster/children/scripts/queue-report.ts";
import { parseReport } from "../../controllers/minicluster/fluxqueue/report.ts";

const python = await (async () => {
  try {
    const out = await new Deno.Command("python3", { args: ["--version"], stdout: "null" }).output();
    return out.success;
  } catch {
    return false;
  }
})();

const FAKE_FLUX: Record<string, string> = {
  "flux/__init__.py": `
CALLS = []

class _Answer:
    def __init__(self, value):
        self.value = value
    def get(self):
        if isinstance(self.value, Exception):
            raise self.value
        return self.value

class Flux:
    answers = {}
    def rpc(self, topic, payload=None, nodeid=None, flags=0):
        CALLS.append(["rpc", topic, payload, nodeid])
        return _Answer(Flux.answers[topic])
`,
  "flux/constants.py": "FLUX_USERID_UNKNOWN = 0xFFFFFFFF\nFLUX_JOB_STATE_PENDING = 14\n",
  "flux/job/__init__.py": `
import flux

PENDING = []

class _List:
    def get_jobs(self):
        return PENDING

def job_list(handle, max_entries=1000, attrs=["all"], userid=0, states=0, **kw):
    flux.CALLS.append(["job_list", max_entries, attrs, userid, states])
    return _List()
`,
  "flux/resource/__init__.py": `
import flux

class RSet:
    def __init__(self, nnodes, ncores):
        self.nnodes, self.ncores = nnodes, ncores

class SchedResourceList:
    def __init__(self, all, down, allocated, free):
        self.all, self.down, self.allocated, self.free = all, down, allocated, free

SETS = None

class _Rpc:
    def get(self):
        return SETS

def resource_list(handle):
    flux.CALLS.append(["resource_list"])
    return _Rpc()
`,
};

const DRIVER = `
import importlib.util, json, sys, urllib.error, urllib.request
import flux, flux.constants, flux.job, flux.resource
from flux.resource import RSet, SchedResourceList

spec = importlib.util.spec_from_file_location("reporter", sys.argv[1])
reporter = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reporter)
out = {}

flux.Flux.answers["job-list.job-stats"] = {
    "job_states": {"depend": 1, "priority": 0, "sched": 2, "run": 1, "cleanup": 1,
                   "inactive": 5, "total": 10},
    "successful": 4, "failed": 1, "canceled": 0, "timeout": 0, "inactive_purged": 0,
    "queues": [],
}
flux.resource.SETS = SchedResourceList(RSet(4, 16), RSet(1, 4), RSet(2, 8), RSet(1, 4))
flux.job.PENDING.extend([{"id": 1, "nnodes": 2}, {"id": 2, "ncores": 6}, {"id": 3}])
out["report"] = reporter.read_queue(flux.Flux(), flux)
out["calls"] = list(flux.CALLS)

flux.CALLS.clear()
flux.Flux.answers["job-list.job-stats"]["job_states"].update(depend=0, sched=0)
out["idle"] = reporter.read_queue(flux.Flux(), flux)
out["idle_calls"] = [c[0] for c in flux.CALLS]

latest = reporter.Latest()
server = reporter.serve(0, latest)
port = server.server_address[1]
def get(path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
            return [r.status, r.read().decode()]
    except urllib.error.HTTPError as e:
        return [e.code, ""]
out["before"] = get(reporter.PATH)
report = dict(out["report"], version=reporter.VERSION, ok=True)
latest.set(report)
out["served"] = get(reporter.PATH)
out["elsewhere"] = get("/")
server.shutdown()
print(json.dumps(out))
`;

Deno.test({
  name:
    "queue reporter (python3, fake flux): asks rank 0, counts the sets, sizes the pending jobs, serves JSON",
  ignore: !python,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "queue-reporter-" });
    try {
      for (const [path, text] of Object.entries(FAKE_FLUX)) {
        await Deno.mkdir(join(dir, path, ".."), { recursive: true });
        await Deno.writeTextFile(join(dir, path), text);
      }
      await Deno.writeTextFile(join(dir, "queue-report.py"), QUEUE_REPORTER_PY);
      await Deno.writeTextFile(join(dir, "driver.py"), DRIVER);
      const run = await new Deno.Command("python3", {
        args: [join(dir, "driver.py"), join(dir, "queue-report.py")],
        env: { PYTHONPATH: dir, PYTHONDONTWRITEBYTECODE: "1" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(run.stderr);
      assert.ok(run.success, stderr);
      const out = JSON.parse(new TextDecoder().decode(run.stdout));
      assert.deepEqual(out.report, {
        jobs: { pending: 3, running: 2 },
        nodes: { total: 4, free: 1, allocated: 2, down: 1 },
        cores: { total: 16, free: 4, allocated: 8, down: 4 },
        // 2 (its -N), 2 (6 cores over 4 a node, rounded up), 1 (neither known)
        pendingNodes: 5,
        largestPendingJobNodes: 2,
        pendingJobsListed: 3,
      });
      assert.deepEqual(out.calls, [
        ["rpc", "job-list.job-stats", {}, 0],
        ["resource_list"],
        ["job_list", 1000, ["nnodes", "ncores"], 0xFFFFFFFF, 14],
      ]);
      assert.deepEqual(out.idle_calls, ["rpc", "resource_list"], "no list without pending jobs");
      assert.equal(out.idle.pendingNodes, 0);
      // Before a first read: "starting"; then the report, which the operator accepts as is.
      assert.equal(out.before[0], 200);
      assert.deepEqual(parseReport(out.before[1]), {
        kind: "fluxError",
        error: "no answer from Flux yet",
        starting: true,
      });
      assert.equal(out.served[0], 200);
      const parsed = parseReport(out.served[1]);
      assert.equal(parsed.kind, "report", out.served[1]);
      if (parsed.kind === "report") assert.equal(parsed.snapshot.pendingNodes, 5);
      assert.deepEqual(out.elsewhere, [404, ""], `only ${QUEUE_REPORT_HTTP_PATH} is served`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
