/** Where the images' Debian packages come from. */

/** The Debian release every rootfs is made from. */
export const DEBIAN_SUITE = "bookworm";

/** Where packages come from; security updates included, so that images are current. */
export const DEBIAN_SOURCES: readonly string[] = [
  "deb http://deb.debian.org/debian bookworm main",
  "deb http://deb.debian.org/debian bookworm-updates main",
  "deb http://deb.debian.org/debian-security bookworm-security main",
];
