/** The command line of chroot_run.sh: a command in a chroot of a rootfs, on an overlay of it. */

export const CHROOT_RUN = new URL("./chroot_run.sh", import.meta.url).pathname;

export interface ChrootOptions {
  /** The rootfs, or its layers topmost first; read-only unless `upper` is given. */
  rootfs: string | readonly string[];
  /** Where the chroot's root is mounted. */
  root: string;
  /** A writable overlay over `rootfs`: its upper and work directories (one file system). */
  upper?: { dir: string; work: string };
  /** The user to run as, "UID:GID". */
  user?: string;
  /** `K=V` entries of the command's environment, beside chroot_run.sh's PATH, HOME and LANG. */
  env?: readonly string[];
  /** In a network namespace of its own (no network at all). */
  noNetwork?: boolean;
}

/** The argv that runs `command` in the chroot `options` describe. */
export function chrootCommand(options: ChrootOptions, command: readonly string[]): string[] {
  return [
    ...(options.noNetwork ? ["unshare", "--net", "--"] : []),
    CHROOT_RUN,
    ...[options.rootfs].flat().flatMap((dir) => ["--lower", dir]),
    ...(options.upper ? ["--upper", options.upper.dir, "--work", options.upper.work] : []),
    ...(options.user ? ["--user", options.user] : []),
    ...(options.env ?? []).flatMap((e) => ["--env", e]),
    options.root,
    "--",
    ...command,
  ];
}
