/**
 * What is wrong with the way to reach the API server: a kubeconfig that cannot be read or used, a
 * missing in-cluster token, or an exec credential plugin that fails. Its own module so that both
 * the kubeconfig reader and the exec plugin runner it configures can throw it.
 */
export class KubeconfigError extends Error {
  override name = "KubeconfigError";
}
