import { randomBytes } from "node:crypto";
import type { Duplex } from "node:stream";
import type { ErrorRequestHandler, Request, RequestHandler, Response } from "express";
import type { Problem, ProblemIssue } from "@audit-review/api-types/internal";
import { connectionLossCause } from "../lib/connection-loss.js";
import { AppError, ValidationErrors } from "../lib/errors.js";
import type { Logger } from "../lib/logger.js";
import { isRecord, recordOf, stringOf } from "../lib/narrow.js";

// A relative reference (RFC 9457 §3.1.1): resolved against the request, it is the code's entry in
// the error catalogue of the server that answered (docs.ts redirects it into the reference).
const TYPE_BASE = "/problems/";

/** The only place that writes application/problem+json. */
export function sendProblem(req: Request, res: Response, err: AppError): void {
  const body: Problem = {
    type: TYPE_BASE + err.code.toLowerCase().replace(/_/g, "-"),
    title: err.title,
    status: err.status,
    detail: err.message,
    code: err.code,
    request_id: req.requestId,
  };
  if (err.issues?.length) body.errors = err.issues;
  for (const [name, value] of Object.entries(err.headers ?? {})) res.setHeader(name, value);
  res.status(err.status).type("application/problem+json").send(JSON.stringify(body));
}

interface ValidatorIssue {
  path?: string;
  message?: string;
}

interface HttpishError {
  status?: number;
  statusCode?: number;
  type?: string;
  errors?: ValidatorIssue[];
  message?: string;
}

/** What body-parser, Express and the validator attach to the errors they throw. */
function httpish(err: unknown): HttpishError {
  const e = recordOf(err);
  const num = (v: unknown) => (typeof v === "number" ? v : undefined);
  return {
    status: num(e.status),
    statusCode: num(e.statusCode),
    type: stringOf(e.type),
    errors: Array.isArray(e.errors)
      ? e.errors.filter(isRecord).map((i) => ({ path: stringOf(i.path), message: stringOf(i.message) }))
      : undefined,
    message: stringOf(e.message),
  };
}

const LOCATIONS = new Set<string>(["query", "path", "header", "body"] satisfies Array<ProblemIssue["location"]>);
const isLocation = (s: string | undefined): s is ProblemIssue["location"] => s !== undefined && LOCATIONS.has(s);

/** `/query/limit` → query + limit; `/body/filters/audit_results` → body + filters.audit_results. */
export function toIssue(issue: ValidatorIssue): ProblemIssue {
  const parts = (issue.path ?? "").replace(/^\./, "").split(/[/.]/).filter(Boolean);
  // the validator reports path parameters under `params` and headers under `headers`
  const first = parts[0] === "headers" ? "header" : parts[0] === "params" ? "path" : parts[0];
  const location = isLocation(first) ? first : "body";
  const rest = isLocation(first) ? parts.slice(1) : parts;
  let message = issue.message ?? "is invalid";
  // ajv reports a missing property on the parent; name the property itself.
  const required = /must have required property '([^']+)'/.exec(message);
  if (required) {
    if (rest[rest.length - 1] !== required[1]) rest.push(required[1]!);
    message = "is required";
  }
  const unknown = /^Unknown query parameter '([^']+)'/.exec(message);
  if (unknown) {
    return { location: "query", name: unknown[1]!, message: "is not a parameter of this operation" };
  }
  // a parameter is named as the caller wrote it (`id`, not `id.0`); the item goes in the message
  if (location !== "body" && rest.length > 1) {
    return { location, name: rest[0]!, message: `item ${rest.slice(1).join(".")} ${message}` };
  }
  return { location, name: rest.join(".") || location, message };
}

/**
 * How long a client waits before sending a request that met a lost database connection again:
 * the pool opens a new connection at once, so a second is enough when the database is up.
 */
const CONNECTION_LOSS_RETRY_AFTER_SECONDS = 1;

/**
 * A lost or unobtainable database connection (lib/connection-loss.ts): the request may be sent
 * again, which a 500 would not say. Nothing of the cause reaches the client.
 */
const serviceUnavailable = () =>
  new AppError(503, "SERVICE_UNAVAILABLE", "Service unavailable", `The service is briefly unavailable; retry after ${CONNECTION_LOSS_RETRY_AFTER_SECONDS} second.`, undefined, {
    "Retry-After": String(CONNECTION_LOSS_RETRY_AFTER_SECONDS),
  });

/** Maps anything thrown to a problem: our errors, the validator's, body-parser's, a lost connection's 503; else a 500. */
export function problemHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    if (res.headersSent) {
      logger.error({ request_id: req.requestId, err: errSummary(err) }, "error after response started");
      res.destroy();
      return;
    }
    if (err instanceof AppError) return sendProblem(req, res, err);
    const e = httpish(err);
    const status = e.status ?? e.statusCode;
    if (e.type === "entity.parse.failed") {
      return sendProblem(req, res, new ValidationErrors([{ location: "body", name: "body", message: "is not valid JSON" }]));
    }
    if (e.type === "request.aborted") {
      // The client went away mid-upload: nobody is left to answer, and nothing of ours failed.
      logger.info({ request_id: req.requestId }, "client aborted the request body");
      res.destroy();
      return;
    }
    // body-parser's and raw-body's own errors carry a `type`; a decoder's (zlib, brotli) do not
    const encoding = req.get("content-encoding");
    if (status === 400 && encoding && e.type === undefined && e.errors === undefined && /^[A-Za-z]+$/.test(encoding)) {
      const name = encoding.slice(0, 20);
      return sendProblem(req, res, new ValidationErrors([{ location: "body", name: "body", message: `is not ${name}-compressed data, as Content-Encoding: ${name} says` }]));
    }
    if (e.type === "request.size.invalid") {
      return sendProblem(req, res, new ValidationErrors([{ location: "body", name: "body", message: "does not have the length Content-Length announces" }]));
    }
    if (status === 413 || e.type === "entity.too.large") {
      return sendProblem(req, res, new AppError(413, "PAYLOAD_TOO_LARGE", "Payload too large", "The request body is too large."));
    }
    if (status === 415) {
      return sendProblem(req, res, new AppError(415, "UNSUPPORTED_MEDIA_TYPE", "Unsupported media type", "The request body must be application/json."));
    }
    if (status === 404 || status === 405) {
      return sendProblem(req, res, new AppError(404, "NOT_FOUND", "Not found", `No operation ${req.method} ${req.path}.`));
    }
    if (status === 400 && Array.isArray(e.errors)) {
      return sendProblem(req, res, new ValidationErrors(e.errors.map(toIssue)));
    }
    const lost = connectionLossCause(err);
    if (lost !== null) {
      // the cause is a fixed label (a SQLSTATE, a socket error code): no message, no connection string
      logger.warn({ request_id: req.requestId, cause: lost }, "database connection lost; answered 503");
      return sendProblem(req, res, serviceUnavailable());
    }
    logger.error({ request_id: req.requestId, err: errSummary(err) }, "unhandled error");
    return sendProblem(req, res, new AppError(500, "INTERNAL_ERROR", "Internal error", "An unexpected error occurred."));
  };
}

/** What is safe to log of an error: its class, message and stack, never request data. */
function errSummary(err: unknown): Record<string, unknown> {
  if (err instanceof Error) {
    const extra = httpish(err).errors;
    return { type: err.name, message: err.message, stack: err.stack, ...(extra ? { errors: extra } : {}) };
  }
  return { value: String(err) };
}

export const notFound: RequestHandler = (req, res) => {
  sendProblem(req, res, new AppError(404, "NOT_FOUND", "Not found", `No operation ${req.method} ${req.path}.`));
};

/**
 * Node answers a request line plus headers over `maxHeaderSize` (16 KiB) itself, before Express
 * sees it, with a bare 431. This writes the contract's problem instead, then closes the socket
 * (the rest of the oversized request is never read). Other parse errors get a 400 problem.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  // only HTTP parse errors get an answer; resets and timeouts just close the socket
  if (!socket.writable || !err.code?.startsWith("HPE_")) {
    socket.destroy();
    return;
  }
  const tooLarge = err.code === "HPE_HEADER_OVERFLOW";
  const status = tooLarge ? 431 : 400;
  // the same shape as request-id.ts makes; nothing of this request can be trusted to echo
  const requestId = `req_${randomBytes(12).toString("hex")}`;
  const body: Problem = tooLarge
    ? { type: TYPE_BASE + "headers-too-large", title: "Request headers too large", status, detail: "The request line and headers exceed 16 KiB.", code: "HEADERS_TOO_LARGE", request_id: requestId }
    : { type: TYPE_BASE + "validation-error", title: "Invalid request", status, detail: "The request is not valid HTTP.", code: "VALIDATION_ERROR", request_id: requestId };
  const json = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${tooLarge ? "Request Header Fields Too Large" : "Bad Request"}\r\n` +
      `Content-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n` +
      `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${json}`,
  );
}
