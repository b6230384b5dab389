/**
 * A read of one object that may not exist: the object, or undefined when the API answers 404.
 *
 * Many reads ask whether something is there (a workspace, a Lease, the live Job, a referenced
 * Secret) and treat "not found" as an answer rather than a failure; every other error is thrown
 * as the client threw it.
 */
import type { ApiClient, CallOptions } from "./api_client.ts";
import { isNotFound } from "./errors.ts";
import type { ResourceType } from "./resources.ts";

export async function getOrUndefined<T>(
  client: Pick<ApiClient, "get">,
  rt: ResourceType,
  namespace: string | undefined,
  name: string,
  opts?: CallOptions,
): Promise<T | undefined> {
  try {
    return await client.get<T>(rt, namespace, name, opts);
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}
