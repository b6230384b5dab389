/**
 * minicluster-operator:<version>: Debian bookworm minbase + ca-certificates (a base layer that
 * changes only with Debian), then one layer with the deno binary, the operator's sources and a
 * DENO_DIR filled for them, keyed by the content of those files: after a source change only that
 * layer is rebuilt, in seconds. The container runs `deno run --cached-only` with the permission
 * flags of deno.json's `compile` task, as 65532, and needs nothing writable but /tmp.
 */
import denoJson from "../../deno.json" with { type: "json" };
import { ensureRootfs, rootfsEntry, type RootfsSpec } from "./rootfs.ts";
import { cachedLayer } from "./layers.ts";
import { sha256File, sha256Hex } from "./cache.ts";
import { chrootCommand } from "./chroot_command.ts";
import type { ImageSpec, Layer } from "./docker_archive.ts";
import { run, step } from "./progress.ts";
import { OPERATOR_IMAGE, SOURCE_DATE_EPOCH } from "./refs.ts";

const REPO = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");

/** What the operator needs at run time, relative to the repository. */
const OPERATOR_SOURCES = [
  "mod.ts",
  "deno.json",
  "deno.lock",
  "api",
  "runtime",
  "controllers",
];

const APP_DIR = "/app";
const DENO_PATH = "/usr/local/bin/deno";
const DENO_DIR = "/deno-dir";
/** The "nonroot" user of distroless images; the restricted Pod Security level wants non-root. */
export const OPERATOR_USER = "65532:65532";

/** The deno binary running this build: the pinned one under ./task, of this machine's arch. */
function hostDenoBinary(): string {
  return Deno.execPath();
}

/**
 * `--v8-flags=...` and `--allow-...` of a `deno compile` command line (deno.json's `compile`
 * task), so that the image runs with exactly the permissions of the compiled binary.
 */
export function runtimeFlags(compileTask: string): string[] {
  return compileTask.split(/\s+/).filter((word) =>
    word.startsWith("--allow-") || word.startsWith("--v8-flags=")
  );
}

export function operatorEntrypoint(compileTask: string = denoJson.tasks.compile): string[] {
  return [DENO_PATH, "run", "--cached-only", ...runtimeFlags(compileTask), `${APP_DIR}/mod.ts`];
}

export const OPERATOR_ENV: readonly string[] = [
  "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  `DENO_DIR=${DENO_DIR}`,
  "DENO_NO_PACKAGE_JSON=1",
  // The only writable place (an emptyDir) in a pod with a read-only root.
  "HOME=/tmp",
];

/** Every file under the sources, sorted, relative to the repository. */
async function sourceFiles(): Promise<string[]> {
  const files: string[] = [];
  const walk = async (relative: string) => {
    const info = await Deno.stat(`${REPO}/${relative}`);
    if (!info.isDirectory) {
      files.push(relative);
      return;
    }
    for await (const entry of Deno.readDir(`${REPO}/${relative}`)) {
      await walk(`${relative}/${entry.name}`);
    }
  };
  for (const source of OPERATOR_SOURCES) await walk(source);
  return files.sort();
}

const OPERATOR_BASE: RootfsSpec = { name: "operator-base", packages: ["ca-certificates"] };

/** Bump when the app layer is laid out differently. */
const APP_RECIPE = 2;

async function appLayer(): Promise<Layer> {
  const files = await sourceFiles();
  const contents: Record<string, string> = {};
  for (const file of files) {
    contents[file] = await sha256Hex(await Deno.readFile(`${REPO}/${file}`));
  }
  const deno = hostDenoBinary();
  const entrypoint = operatorEntrypoint();
  return cachedLayer(
    "operator-app",
    { APP_RECIPE, contents, deno: await sha256File(deno), entrypoint, env: OPERATOR_ENV },
    `deno ${DENO_PATH}, sources in ${APP_DIR}, deno cache in ${DENO_DIR}`,
    async (tree) => {
      for (const file of files) {
        const target = `${tree}${APP_DIR}/${file}`;
        await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), { recursive: true });
        await Deno.copyFile(`${REPO}/${file}`, target);
      }
      await Deno.mkdir(`${tree}/usr/local/bin`, { recursive: true });
      await Deno.copyFile(deno, `${tree}${DENO_PATH}`);
      await Deno.mkdir(`${tree}${DENO_DIR}`);
      // npm packages of deno.lock, fetched by the machine's deno (the rootfs has no resolver).
      await step("operator: deno cache", () =>
        run([deno, "cache", "mod.ts"], {
          cwd: `${tree}${APP_DIR}`,
          env: { DENO_DIR: `${tree}${DENO_DIR}`, DENO_NO_PACKAGE_JSON: "1" },
          logFile: `${tree}.deno-cache.log`,
        }));
      // The machine's deno also left caches keyed by paths on this machine: keep the downloads.
      for await (const entry of Deno.readDir(`${tree}${DENO_DIR}`)) {
        if (entry.name !== "npm" && entry.name !== "remote") {
          await Deno.remove(`${tree}${DENO_DIR}/${entry.name}`, { recursive: true });
        }
      }
      const base = await ensureRootfs(OPERATOR_BASE);
      await Deno.mkdir(`${tree}.work`);
      // One run inside the image (its paths, root, offline) leaves the transpiled sources and
      // V8's code cache in DENO_DIR, which a read-only container could not write.
      await step("operator: warm DENO_DIR in the image", () =>
        run(
          chrootCommand({
            rootfs: base,
            root: `${tree}.root`,
            upper: { dir: tree, work: `${tree}.work` },
            env: OPERATOR_ENV,
          }, [...entrypoint, "--help"]),
          { logFile: `${tree}.warm.log` },
        ));
      await Deno.remove(`${tree}.work`, { recursive: true });
      await Deno.remove(`${tree}.root`);
      // Readable by the unprivileged user whatever the umask was.
      await run(["chmod", "-R", "a+rX,go-w", tree]);
      return tree;
    },
  );
}

export async function operatorImageSpec(): Promise<ImageSpec> {
  const { name } = await rootfsEntry(OPERATOR_BASE);
  const baseLayer = await cachedLayer(
    "operator-base",
    { rootfs: name },
    "mmdebstrap --variant=minbase --include=ca-certificates bookworm",
    () => ensureRootfs(OPERATOR_BASE),
  );
  return {
    refs: [OPERATOR_IMAGE],
    layers: [baseLayer, await appLayer()],
    config: {
      Entrypoint: operatorEntrypoint(),
      Env: [...OPERATOR_ENV],
      User: OPERATOR_USER,
      WorkingDir: APP_DIR,
      Labels: { "org.opencontainers.image.version": denoJson.version },
    },
    created: SOURCE_DATE_EPOCH,
  };
}
