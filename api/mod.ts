/**
 * The MiniCluster API (flux-framework.org/v1alpha2): types generated from crds/minicluster.yaml,
 * typed defaulting, the semantic checks the CRD's validation cannot express, and the resource.
 */
export * from "./v1alpha2.ts";
export * from "./defaults.ts";
export * from "./validate.ts";
export * from "./resource.ts";
