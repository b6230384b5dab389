/** The pull policy of an image the pods use: the containers' images and the Flux view image. */

/** `pullAlways` wins over `imagePullPolicy`, which wins over IfNotPresent (Go operator order). */
export function pullPolicy(c: { pullAlways?: boolean; imagePullPolicy?: string }): string {
  if (c.pullAlways) return "Always";
  return c.imagePullPolicy || "IfNotPresent";
}
