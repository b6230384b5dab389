/**
 * Checks of built images, run on their flattened rootfs (the layer tars themselves, unpacked):
 * pause stops cleanly on SIGTERM, the operator prints its help as 65532 on a read-only root
 * without network, flux-app has the Python Flux needs, and flux-view passes the operator's
 * contract with a real single-broker Flux instance.
 */
import { basename } from "node:path";
import type { Layer } from "./docker_archive.ts";
import { removeTree } from "./cache.ts";
import { chrootCommand } from "./chroot_command.ts";
import { log, output, run, step } from "./progress.ts";
import type { ImageName } from "./refs.ts";
import { OPERATOR_ENV, OPERATOR_USER, operatorEntrypoint } from "./operator_image.ts";

const FLUX_VIEW_CHECK = new URL("./flux_view_check.sh", import.meta.url).pathname;
const MPI_CHECK = new URL("./mpi_check.sh", import.meta.url).pathname;

/** Unpacks the layers in order into `dir` (our layers have no whiteouts). */
export async function flattenLayers(layers: readonly Layer[], dir: string): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  for (const layer of layers) {
    await run([
      "tar",
      "--extract",
      "--same-permissions",
      "--numeric-owner",
      "-f",
      layer.path,
      "-C",
      dir,
    ]);
  }
}

async function verifyPause(rootfs: string): Promise<void> {
  const child = new Deno.Command(`${rootfs}/pause`, { stdin: "null" }).spawn();
  await new Promise((resolve) => setTimeout(resolve, 300));
  child.kill("SIGTERM");
  const status = await child.status;
  if (status.code !== 0 || status.signal !== null) {
    throw new Error(`pause: SIGTERM gave code ${status.code} signal ${status.signal}, want 0`);
  }
  log("pause: exits 0 on SIGTERM");
}

async function verifyOperator(rootfs: string, work: string): Promise<void> {
  // --lower alone: the root is a read-only bind; /tmp is a fresh tmpfs, as the emptyDir in a pod.
  const help = await output(chrootCommand(
    { rootfs, root: `${work}/root`, user: OPERATOR_USER, env: OPERATOR_ENV, noNetwork: true },
    [...operatorEntrypoint(), "--help"],
  ));
  if (!help.startsWith("Usage: minicluster-operator")) {
    throw new Error(`operator --help printed:\n${help}`);
  }
  log(`operator: --help as ${OPERATOR_USER}, read-only root, no network: ${help.split("\n")[0]}`);
}

async function verifyFluxApp(rootfs: string, work: string): Promise<void> {
  const version = await output(chrootCommand({ rootfs, root: `${work}/root` }, [
    "/usr/bin/python3",
    "-c",
    "import sys, yaml, ply, _cffi_backend; print(sys.version.split()[0])",
  ]));
  if (!version.startsWith("3.11.")) throw new Error(`flux-app: python3 is ${version}`);
  log(`flux-app: python3 ${version.trim()} with yaml, ply, cffi`);
}

/**
 * Runs `script` as `/mnt/<its name>` with bash in a chroot of `rootfs` (an overlay under `work`)
 * without network, logging to `<work>.<label>-check.log`; returns that file and its lines.
 */
async function runCheckScript(
  rootfs: string,
  work: string,
  script: string,
  label: string,
): Promise<{ logFile: string; lines: string[] }> {
  const name = basename(script);
  for (const dir of ["upper/mnt", "work"]) await Deno.mkdir(`${work}/${dir}`, { recursive: true });
  await Deno.copyFile(script, `${work}/upper/mnt/${name}`);
  const logFile = `${work}.${label}-check.log`;
  await run(
    chrootCommand({
      rootfs,
      root: `${work}/root`,
      upper: { dir: `${work}/upper`, work: `${work}/work` },
      noNetwork: true,
    }, ["/bin/bash", `/mnt/${name}`]),
    { logFile },
  );
  return { logFile, lines: (await Deno.readTextFile(logFile)).trimEnd().split("\n") };
}

async function verifyFluxView(rootfs: string, work: string): Promise<void> {
  const { logFile, lines } = await runCheckScript(rootfs, work, FLUX_VIEW_CHECK, "flux-view");
  log(
    `flux-view: ${lines.at(-1)}: view copied, broker started, Fluxion loaded, job ran (${logFile})`,
  );
}

async function verifyMpi(rootfs: string, work: string): Promise<void> {
  const { logFile, lines } = await runCheckScript(rootfs, work, MPI_CHECK, "mpi");
  log(`mpi: ${lines.slice(-4).join("; ")} (${logFile})`);
}

/** Flattens `layers` under `work` and checks the image `name`; removes what it made. */
export async function verifyImage(
  name: ImageName,
  layers: readonly Layer[],
  work: string,
): Promise<void> {
  await step(`${name}: verify`, async () => {
    const rootfs = `${work}/rootfs`;
    try {
      await flattenLayers(layers, rootfs);
      if (name === "pause") await verifyPause(rootfs);
      else if (name === "operator") await verifyOperator(rootfs, work);
      else if (name === "flux-app") await verifyFluxApp(rootfs, work);
      else if (name === "mpi") await verifyMpi(rootfs, work);
      else await verifyFluxView(rootfs, work);
    } finally {
      await removeTree(work);
    }
  });
}
