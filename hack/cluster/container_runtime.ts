// The container runtime of the real nodes. By default containerd 2 and runc built from their Go
// modules (hack/build-binaries.sh: containerd v2.4.2, the release line its RELEASES.md lists for
// Kubernetes 1.37, and runc v1.5.3): it serves image volumes, with `subPath` on their mounts.
// `debian` keeps Debian's containerd 1.6 and runc 1.1 from the packages, which cannot mount an
// image volume: the container is never created (CreateContainerError, `failed to mkdir ""`).

import { join } from "node:path";

export const CONTAINER_RUNTIMES = ["v2", "debian"] as const;
export type ContainerRuntime = typeof CONTAINER_RUNTIMES[number];
export const DEFAULT_CONTAINER_RUNTIME: ContainerRuntime = "v2";

export function parseContainerRuntime(value: string): ContainerRuntime {
  const found = CONTAINER_RUNTIMES.find((r) => r === value);
  if (!found) {
    throw new Error(`--containerd: ${value} (one of ${CONTAINER_RUNTIMES.join(", ")})`);
  }
  return found;
}

/** The programs a node runs or drives for its containers. */
export interface RuntimeBinaries {
  containerd: string;
  /**
   * The shim containerd starts per pod. containerd 2 looks for it on PATH first, where Debian's
   * 1.6 shim may be (it cannot talk to containerd 2): the nodes name it by its path.
   */
  shim: string;
  /** The client `up` imports images and checks readiness with. */
  ctr: string;
  /** The OCI runtime containerd's shim starts. */
  runc: string;
}

export function runtimeBinaries(runtime: ContainerRuntime, binDir: string): RuntimeBinaries {
  if (runtime === "debian") {
    return {
      containerd: "/usr/bin/containerd",
      shim: "/usr/bin/containerd-shim-runc-v2",
      ctr: "/usr/bin/ctr",
      runc: "/usr/sbin/runc",
    };
  }
  return {
    containerd: join(binDir, "containerd"),
    shim: join(binDir, "containerd-shim-runc-v2"),
    ctr: join(binDir, "ctr"),
    runc: join(binDir, "runc"),
  };
}

/** Names of hack/build-binaries.sh the runtime needs built. */
export function runtimeBuilds(runtime: ContainerRuntime): string[] {
  return runtime === "v2" ? ["containerd", "runc"] : [];
}

/**
 * Debian packages of the runtime: the CNI plugins and firewall tools for both; the built runc
 * links Debian's libseccomp.
 */
export function runtimePackages(runtime: ContainerRuntime): string[] {
  const common = ["containernetworking-plugins", "iptables", "conntrack"];
  return runtime === "debian" ? ["containerd", "runc", ...common] : ["libseccomp2", ...common];
}
