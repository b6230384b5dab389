/**
 * minicluster.local/pause: the sandbox image of a real node's pods, one static binary built from
 * pause.c with the machine's gcc (a static binary needs nothing from the image, so no rootfs).
 */
import { output, run, step } from "./progress.ts";
import { cachedLayer } from "./layers.ts";
import type { ImageSpec } from "./docker_archive.ts";
import { PAUSE_IMAGE, SOURCE_DATE_EPOCH } from "./refs.ts";

const PAUSE_SOURCE = new URL("./pause.c", import.meta.url).pathname;
/** No build id: the same source and compiler give the same bytes. */
const CFLAGS = ["-static", "-Os", "-s", "-Wall", "-Wextra", "-Werror", "-Wl,--build-id=none"];

export async function pauseImageSpec(): Promise<ImageSpec> {
  const compiler = (await output(["gcc", "--version"])).split("\n")[0];
  const layer = await cachedLayer(
    "pause",
    { source: await Deno.readTextFile(PAUSE_SOURCE), compiler, CFLAGS },
    `gcc ${CFLAGS.join(" ")} -o /pause pause.c (${compiler})`,
    async (tree) => {
      await Deno.mkdir(tree, { recursive: true });
      await step(
        "pause: gcc -static",
        () => run(["gcc", ...CFLAGS, "-o", `${tree}/pause`, PAUSE_SOURCE]),
      );
      await Deno.chmod(`${tree}/pause`, 0o755);
      return tree;
    },
  );
  return {
    refs: [PAUSE_IMAGE],
    layers: [layer],
    config: { Entrypoint: ["/pause"], User: "65535:65535" },
    created: SOURCE_DATE_EPOCH,
  };
}
