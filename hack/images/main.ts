/**
 * `deno task image [--verify] [NAME...]`: builds the local images (all by default: pause,
 * flux-app, flux-view, operator, mpi) into the cache and prints one "REF ARCHIVE" line per tag.
 * Progress and timings go to stderr. Needs root (mmdebstrap, chroot, mounts).
 */
import { ensureImages } from "./images.ts";
import { IMAGE_NAMES, type ImageName } from "./refs.ts";
import { log, timings } from "./progress.ts";

const args = Deno.args.filter((a) => a !== "--verify");
const unknown = args.filter((a) => !(IMAGE_NAMES as readonly string[]).includes(a));
if (unknown.length > 0 || Deno.args.includes("--help")) {
  console.error(`usage: deno task image [--verify] [${IMAGE_NAMES.join("|")}]...`);
  Deno.exit(unknown.length > 0 ? 2 : 0);
}
const names = args.length > 0 ? args as ImageName[] : IMAGE_NAMES;
const started = performance.now();
const archives = await ensureImages(names, { verify: Deno.args.includes("--verify") });
for (const { refs, archive } of archives) {
  for (const ref of refs) console.log(`${ref} ${archive}`);
}
for (const { step, seconds } of timings) log(`timing: ${seconds.toFixed(1)} s  ${step}`);
log(`done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
