/**
 * Typed errors of the Kubernetes API.
 *
 * The API server answers failures with a `Status` object whose `reason` is a machine-readable word
 * ("NotFound", "Conflict", "Expired", ...). Callers branch on that (relist on 410, retry on 409), so
 * the error keeps the whole Status rather than a formatted message.
 */
import type { Status } from "kubernetes-types/meta/v1.d.ts";

export type { Status };

export class ApiError extends Error {
  override name = "ApiError";
  /** HTTP status code of the response (or the `code` of a watch ERROR event's Status). */
  readonly code: number;
  /** `Status.reason` ("NotFound", "Conflict", "Expired", ...), or "Unknown" when absent. */
  readonly reason: string;
  /** The API's Status body (synthesized when the server sent something else). */
  readonly status: Status;

  constructor(status: Status, context?: string) {
    const code = status.code ?? 0;
    const reason = status.reason || "Unknown";
    const message = status.message || reason;
    super(context ? `${context}: ${code} ${reason}: ${message}` : `${code} ${reason}: ${message}`);
    this.code = code;
    this.reason = reason;
    this.status = status;
  }

  /**
   * An ApiError from a response body that may or may not be a Status (proxies and some endpoints
   * answer with plain text); the HTTP code always wins over the body's `code`.
   */
  static fromResponse(code: number, body: string, context?: string): ApiError {
    let status: Status | undefined;
    try {
      const parsed = JSON.parse(body);
      if (parsed && typeof parsed === "object" && parsed.kind === "Status") status = parsed;
    } catch {
      // not JSON: fall through to a synthesized Status
    }
    status ??= {
      kind: "Status",
      apiVersion: "v1",
      status: "Failure",
      message: body.trim().slice(0, 1024) || `HTTP ${code}`,
      reason: reasonForCode(code),
    };
    return new ApiError({ ...status, code }, context);
  }
}

/** The reason the API server would give for a bare HTTP code (k8s.io/apimachinery's table). */
function reasonForCode(code: number): string {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Expired";
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "Unknown";
  }
}

function apiError(e: unknown): ApiError | undefined {
  return e instanceof ApiError ? e : undefined;
}

export function isNotFound(e: unknown): boolean {
  return apiError(e)?.code === 404;
}

/** 409 that is not AlreadyExists: an optimistic-concurrency or precondition failure. */
export function isConflict(e: unknown): boolean {
  const err = apiError(e);
  return err?.code === 409 && err.reason !== "AlreadyExists";
}

export function isAlreadyExists(e: unknown): boolean {
  const err = apiError(e);
  return err?.code === 409 && err.reason === "AlreadyExists";
}

/** 410 Gone / Expired: the resourceVersion is too old; a watcher must relist. */
export function isGone(e: unknown): boolean {
  const err = apiError(e);
  return err?.code === 410 || err?.reason === "Expired" || err?.reason === "Gone";
}

export function isForbidden(e: unknown): boolean {
  return apiError(e)?.code === 403;
}

export function isUnauthorized(e: unknown): boolean {
  return apiError(e)?.code === 401;
}

export function isInvalid(e: unknown): boolean {
  return apiError(e)?.code === 422;
}

/**
 * 403 from the quota admission plugin: a ResourceQuota of the namespace has no room for the object
 * (or the quota controller has not computed its usage yet). It passes when the quota is raised or
 * other objects go, which no watch of ours announces.
 */
export function isQuotaExceeded(e: unknown): boolean {
  const err = apiError(e);
  return err?.code === 403 &&
    /exceeded quota|status unknown for quota/.test(err.status.message ?? "");
}

/** Errors worth retrying as-is: throttling, timeouts and server-side failures. */
export function isRetryable(e: unknown): boolean {
  const err = apiError(e);
  if (!err) return false;
  return err.code === 429 || err.code === 0 || err.code >= 500;
}

/** The message of an error as a user should read it: the API's Status message when there is one. */
export function errorMessage(e: unknown): string {
  if (e instanceof ApiError) {
    const msg = e.status.message || e.reason;
    return `${e.code} ${e.reason}: ${msg}`;
  }
  return e instanceof Error ? e.message : String(e);
}
