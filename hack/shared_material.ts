// Where the project's shared material is (`shared/`: the Flux sources, the Go operator's source):
// beside the repository (`../shared`), as the developers' guide lays it out, or in the workplace's
// fixed place when the repository was cloned elsewhere (CI runs a clean clone).

import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const CANDIDATES = [
  fileURLToPath(new URL("../../shared", import.meta.url)),
  "/work/shared",
];

/**
 * The path of `relative` inside the shared directory: `override` when given, else the first
 * candidate holding it. Throws naming every place looked at.
 */
export function sharedPath(relative: string, override?: string): string {
  if (override) return override;
  for (const dir of CANDIDATES) {
    const path = `${dir}/${relative}`;
    if (existsSync(path)) return path;
  }
  throw new Error(
    `shared material ${relative} not found in ${CANDIDATES.join(" or ")}`,
  );
}
