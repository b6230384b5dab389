// The entrypoint's resource-set lines against real Flux under a topology of two hardware threads
// per core, the case a real node of this machine cannot show: its two CPUs cannot be requested
// whole beside the operator and CoreDNS, so no pod there is granted more CPUs than cores. Here the
// lines run in a chroot of the flux-view image (the Flux the pods run) with the topology from
// FLUX_HWLOC_XMLFILE, as flux-core's own tests load one, and a single broker starts on the R they
// wrote: the rank must not be drained, a job of one task per core must run and one of one task per
// hardware thread must be refused.

import assert from "node:assert/strict";
import { resourceSetLines } from "../../controllers/minicluster/children/scripts/parts/cores.ts";
import type { ContainerInput } from "../../controllers/minicluster/children/scripts/parts/input.ts";
import { chrootCommand } from "../../hack/images/chroot_command.ts";
import { ensureImages } from "../../hack/images/images.ts";
import { realNodesAvailable } from "./env.ts";
import { resourceRow, smtTopologyXml } from "./flux_resources.ts";

const text = (b: Uint8Array) => new TextDecoder().decode(b);

async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(args[0], { args: args.slice(1), stdin: "null" }).output();
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

/** The flux-view image's layers, unpacked in order into `dir`. */
async function unpackFluxView(dir: string): Promise<void> {
  const [{ archive }] = await ensureImages(["flux-view"]);
  const manifest = await run(["tar", "-xOf", archive, "manifest.json"]);
  const layers: string[] = JSON.parse(manifest.stdout)[0].Layers;
  await Deno.mkdir(dir, { recursive: true });
  for (const layer of layers) {
    const unpack = await run([
      "bash",
      "-c",
      'tar -xOf "$1" "$2" | tar -x --same-permissions --numeric-owner -C "$3"',
      "unpack",
      archive,
      layer,
      dir,
    ]);
    assert.equal(unpack.code, 0, unpack.stderr);
  }
}

/**
 * Scripts: `broker.sh` writes R with the entrypoint's lines for a Flux container of `cpu` CPUs and
 * starts one broker on it, which runs `instance.sh`: its resources, its drained ranks and the
 * outcome of two jobs.
 */
function brokerScripts(cpu: string, fits: number, tooMany: number): Record<string, string> {
  const container: ContainerInput = {
    image: "flux-view",
    pullAlways: false,
    runFlux: true,
    resources: { limits: { cpu } },
  };
  const inInstance = [
    "echo '== list'",
    "flux resource list",
    "echo '== drained'",
    "flux resource drain -no '{ranks} {reason}'",
    "echo '== fits'",
    // A drained rank leaves a job waiting for ever: the kill is the failure's end, not a wait.
    `timeout -s KILL 20 flux run -n${fits} hostname > /dev/null 2>&1; echo "exit $?"`,
    "echo '== too many'",
    `timeout -s KILL 20 flux run -n${tooMany} hostname 2>&1; echo "exit $?"`,
  ].join("\n");
  const broker = [
    "set -u",
    "export PATH=/opt/view/bin:$PATH",
    "configroot=/tmp/config",
    'mkdir -p "${configroot}/etc/flux/system" "${configroot}/conf"',
    'hostname > "${configroot}/etc/flux/system/hostlist"',
    ...resourceSetLines(container, true),
    `printf '[resource]\\npath = "%s"\\n' "\${configroot}/etc/flux/system/R" > "\${configroot}/conf/resource.toml"`,
    `echo "== R $(flux R decode --short < "\${configroot}/etc/flux/system/R")"`,
    `timeout 90 flux start -o,--config-path="\${configroot}/conf" bash /topology/instance.sh`,
    'echo "== instance exit $?"',
  ].join("\n");
  return { "broker.sh": broker, "instance.sh": inInstance };
}

/** The lines under `== name` up to the next marker. */
function section(out: string, name: string): string {
  const lines = out.split("\n");
  const start = lines.indexOf(`== ${name}`);
  if (start < 0) return "";
  const end = lines.findIndex((l, i) => i > start && l.startsWith("== "));
  return lines.slice(start + 1, end < 0 ? undefined : end).join("\n");
}

/** Runs `broker.sh` of `scripts` as root in an overlay of `rootfs` with the topology `xml` loaded by Flux. */
async function inFluxView(
  rootfs: string,
  work: string,
  xml: string,
  scripts: Record<string, string>,
) {
  for (const dir of ["upper", "work", "root"]) {
    await Deno.remove(`${work}/${dir}`, { recursive: true }).catch(() => {});
    await Deno.mkdir(`${work}/${dir}`, { recursive: true });
  }
  await Deno.mkdir(`${work}/upper/topology`);
  await Deno.writeTextFile(`${work}/upper/topology/topology.xml`, xml);
  for (const [file, script] of Object.entries(scripts)) {
    await Deno.writeTextFile(`${work}/upper/topology/${file}`, script);
  }
  return await run(chrootCommand({
    rootfs,
    root: `${work}/root`,
    upper: { dir: `${work}/upper`, work: `${work}/work` },
    env: [
      "FLUX_HWLOC_XMLFILE=/topology/topology.xml",
      // The topology as written, not cut to this machine's CPUs (it has more threads than they).
      "FLUX_HWLOC_XMLFILE_NOT_THISSYSTEM=1",
    ],
  }, ["/bin/bash", "/topology/broker.sh"]));
}

Deno.test({
  name:
    "real Flux: 4 CPUs on 2 cores of 2 threads advertise 2 cores; no drain, -n2 runs, -n4 refused",
  ignore: !realNodesAvailable(),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const work = await Deno.makeTempDir({ prefix: "cores-hwloc-" });
    try {
      await unpackFluxView(`${work}/rootfs`);
      const xml = smtTopologyXml(2, 2);

      // Four Kubernetes CPUs pinned to two cores' four threads.
      const smt = await inFluxView(`${work}/rootfs`, work, xml, brokerScripts("4", 2, 4));
      const out = `${smt.stdout}\n${smt.stderr}`;
      assert.match(smt.stdout, /^== R rank0\/core\[0-1\]$/m, out);
      assert.match(smt.stderr, /grant 4 CPU\(s\), but hwloc finds 2 core\(s\) in its cpuset/, out);
      assert.deepEqual(
        resourceRow(section(smt.stdout, "list"), "free"),
        { nodes: 1, cores: 2 },
        out,
      );
      assert.equal(section(smt.stdout, "drained").trim(), "", out);
      assert.doesNotMatch(out, /missing resources/);
      assert.equal(section(smt.stdout, "fits").trim(), "exit 0", out);
      const tooMany = section(smt.stdout, "too many");
      assert.match(tooMany, /unsatisfiable/, out);
      assert.match(tooMany, /^exit 1$/m, out);
      assert.match(smt.stdout, /^== instance exit 0$/m, out);

      // As many CPUs as cores: the CPUs, and no word about it.
      const even = await inFluxView(`${work}/rootfs`, work, xml, brokerScripts("2", 2, 3));
      const evenOut = `${even.stdout}\n${even.stderr}`;
      assert.match(even.stdout, /^== R rank0\/core\[0-1\]$/m, evenOut);
      assert.doesNotMatch(even.stderr, /hwloc finds/, evenOut);
      assert.equal(section(even.stdout, "fits").trim(), "exit 0", evenOut);
      assert.match(section(even.stdout, "too many"), /unsatisfiable/, evenOut);
    } finally {
      await Deno.remove(work, { recursive: true });
    }
  },
});
