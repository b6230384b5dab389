/**
 * Writes the pin list of each pinned rootfs (debian_pins.ts) from what apt would install today
 * (debian_resolve.ts).
 *
 *   deno run -A hack/images/pin_debian_packages.ts      # rewrites hack/images/mpi_debian_pins.txt
 */
import { formatPins } from "./debian_pins.ts";
import { resolvePins } from "./debian_resolve.ts";
import type { RootfsSpec } from "./rootfs.ts";
import { MPI_ROOTFS } from "./mpi_image.ts";

/** The rootfs specs whose packages are pinned. */
const PINNED: readonly RootfsSpec[] = [MPI_ROOTFS];

if (import.meta.main) {
  for (const spec of PINNED) {
    if (!spec.pins) continue;
    const root = await Deno.makeTempDir({ prefix: `pin-debian-${spec.name}-` });
    try {
      const pins = await resolvePins(spec.packages, root);
      await Deno.writeTextFile(
        spec.pins,
        formatPins(pins, [
          `Every Debian package of the ${spec.name} image's rootfs, at the version it is built with`,
          "(hack/images/debian_pins.ts). Written from what apt would install on " +
          `${new Date().toISOString().slice(0, 10)} by`,
          "  deno run -A hack/images/pin_debian_packages.ts",
          "which refreshes it once Debian has dropped a pinned version (docs/development.md).",
        ]),
      );
      console.error(`${spec.pins}: ${pins.size} packages`);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  }
}
