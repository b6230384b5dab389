/**
 * The operator's CustomResourceDefinitions: every YAML file of crds/. Whatever installs them (the
 * demo, the test harness, the benchmarks, the conformance runs, deploy/install.yaml and the chart)
 * takes this list, so a CRD added to crds/ reaches every one of them.
 */

const CRD_DIR = new URL("../crds/", import.meta.url);

/** Paths relative to the repository root ("crds/minicluster.yaml"), sorted. */
export const CRD_FILES: readonly string[] = Object.freeze(
  [...Deno.readDirSync(CRD_DIR)]
    .filter((e) => e.isFile && /\.ya?ml$/.test(e.name))
    .map((e) => `crds/${e.name}`)
    .sort(),
);
