import type { ErrorCode, Problem, ProblemIssue } from "@audit-review/api-types";
import { isRecord } from "./guards.js";

/**
 * A non-2xx answer of the API. Carries the `application/problem+json` body (RFC 9457) when the
 * server sent one; when something else answered (a proxy's HTML page, an empty body), `problem`
 * is null and `code` is null, but `status` and `requestId` are still set when known.
 */
export class ApiError extends Error {
  override readonly name = "ApiError";
  /** The HTTP status. */
  readonly status: number;
  /** The stable UPPER_SNAKE code of the problem, e.g. `INVALID_CURSOR`; null when the body was not a problem. */
  readonly code: ErrorCode | null;
  /** The request id (problem body, else `X-Request-Id`): quote it to support. */
  readonly requestId: string | null;
  /** For validation failures, each offending parameter; otherwise empty. */
  readonly errors: ProblemIssue[];
  /** The problem body as sent; null when the answer was not a problem. */
  readonly problem: Problem | null;
  /** For 429 and 503: the seconds `Retry-After` asks to wait; otherwise null. */
  readonly retryAfterSeconds: number | null;
  /** The HTTP method and URL of the failed request. */
  readonly request: { method: string; url: string };

  constructor(init: {
    status: number;
    problem: Problem | null;
    requestId: string | null;
    retryAfterSeconds?: number | null;
    request: { method: string; url: string };
    message?: string;
  }) {
    const { status, problem } = init;
    super(
      init.message ??
        (problem ? `${status} ${problem.code}: ${problem.detail}` : `${status}: unexpected response from the API`),
    );
    this.status = status;
    this.problem = problem;
    this.code = problem?.code ?? null;
    this.requestId = problem?.request_id ?? init.requestId;
    this.errors = problem?.errors ?? [];
    this.retryAfterSeconds = init.retryAfterSeconds ?? null;
    this.request = init.request;
  }

  /** Builds the error from a failed response and the body openapi-fetch parsed from it. */
  static fromResponse(response: Response, body: unknown, request: { method: string; url: string }): ApiError {
    const retryAfter = response.headers.get("retry-after");
    const seconds = retryAfter !== null && /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter.trim()) : null;
    return new ApiError({
      status: response.status,
      problem: isProblem(body) ? body : null,
      requestId: response.headers.get("x-request-id"),
      retryAfterSeconds: seconds,
      request,
    });
  }
}

/** Whether a value has the shape of our problem body (the fields every problem carries). */
export function isProblem(value: unknown): value is Problem {
  if (!isRecord(value)) return false;
  return (
    typeof value.type === "string" &&
    typeof value.title === "string" &&
    typeof value.status === "number" &&
    typeof value.detail === "string" &&
    typeof value.code === "string" &&
    typeof value.request_id === "string" &&
    (value.errors === undefined || Array.isArray(value.errors))
  );
}
