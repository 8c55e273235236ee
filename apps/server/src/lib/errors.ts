import type { ErrorCode, ProblemIssue } from "@audit-review/api-types/internal";

/**
 * The one error vocabulary of the service. Services throw these; `http/problem.ts` is the only
 * place that turns them (and everything else) into application/problem+json.
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    readonly title: string,
    message: string,
    readonly issues?: ProblemIssue[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** `query parameter limit: must be >= 1; body url: is required` */
export function describeIssues(issues: readonly ProblemIssue[]): string {
  return issues
    .map((i) => (i.location === "body" ? (i.name === "body" ? "body" : `body ${i.name}`) : `${i.location} parameter ${i.name}`) + `: ${i.message}`)
    .join("; ");
}

/** A request with one or more invalid parameters or fields; `errors` names every one. */
export class ValidationErrors extends AppError {
  constructor(issues: ProblemIssue[]) {
    super(400, "VALIDATION_ERROR", "Invalid request", describeIssues(issues), issues);
  }
}

export class ValidationError extends ValidationErrors {
  constructor(location: ProblemIssue["location"], name: string, message: string, more: ProblemIssue[] = []) {
    super([{ location, name, message }, ...more]);
  }

  /** One problem naming every offending field (never only the first). */
  static many(location: ProblemIssue["location"], issues: ReadonlyArray<{ name: string; message: string }>): ValidationError {
    const [first, ...rest] = issues;
    return new ValidationError(location, first!.name, first!.message, rest.map((i) => ({ location, ...i })));
  }
}

export class InvalidCursorError extends AppError {
  constructor(name: "starting_after" | "ending_before") {
    super(400, "INVALID_CURSOR", "Invalid cursor", `${name} is not the id of an item of this list.`, [
      { location: "query", name, message: "not an item of this list" },
    ]);
  }
}

export class InvalidWebhookUrlError extends AppError {
  constructor(field: string, reason: string) {
    super(400, "INVALID_WEBHOOK_URL", "Invalid webhook URL", `${field}: ${reason}`, [
      { location: "body", name: field, message: reason },
    ]);
  }
}

export class UnauthenticatedError extends AppError {
  constructor(detail = "A valid bearer token is required.") {
    super(401, "UNAUTHENTICATED", "Unauthenticated", detail, undefined, {
      "WWW-Authenticate": 'Bearer error="invalid_token"',
    });
  }
}

export class InsufficientScopeError extends AppError {
  constructor(scopes: readonly string[]) {
    const scope = scopes.join(" ");
    super(403, "INSUFFICIENT_SCOPE", "Insufficient scope", `This operation requires the scope ${scope}.`, undefined, {
      "WWW-Authenticate": `Bearer error="insufficient_scope", scope="${scope}"`,
    });
  }
}

export class NotFoundError extends AppError {
  constructor(detail: string) {
    super(404, "NOT_FOUND", "Not found", detail);
  }
}

export class EndpointLimitReachedError extends AppError {
  constructor(limit: number) {
    super(409, "ENDPOINT_LIMIT_REACHED", "Endpoint limit reached", `An org can have at most ${limit} webhook endpoints.`);
  }
}

export class EndpointDisabledError extends AppError {
  constructor() {
    super(409, "ENDPOINT_DISABLED", "Endpoint disabled", "The webhook endpoint is disabled.");
  }
}

export class DeliveryInProgressError extends AppError {
  constructor() {
    super(409, "DELIVERY_IN_PROGRESS", "Delivery in progress", "The delivery is still pending or retrying.");
  }
}

/** A retry or recovery that would revive a delivery retention removes within a day (domain/retention.ts). */
export class DeliveryExpiringError extends AppError {
  constructor(detail: string) {
    super(409, "DELIVERY_EXPIRING", "Delivery expiring", detail);
  }
}

export class IdempotencyKeyInUseError extends AppError {
  constructor() {
    super(409, "IDEMPOTENCY_KEY_IN_USE", "Idempotency key in use", "A request with this Idempotency-Key is still being processed.");
  }
}

export class IdempotencyKeyReusedError extends AppError {
  constructor() {
    super(422, "IDEMPOTENCY_KEY_REUSED", "Idempotency key reused", "This Idempotency-Key was used with a different request.");
  }
}

export class ListenerInUseError extends AppError {
  constructor() {
    super(409, "LISTENER_IN_USE", "Listener in use", "Another stream of this webhook listener is connected.");
  }
}

export class ListenerLimitReachedError extends AppError {
  constructor(limit: number) {
    super(409, "LISTENER_LIMIT_REACHED", "Listener limit reached", `An org can have at most ${limit} live webhook listeners; delete one (ars-listen deletes its own when it stops).`);
  }
}
