import type { ErrorRequestHandler, Request, RequestHandler, Response } from "express";
import type { Problem, ProblemIssue } from "@audit-review/api-types/internal";
import { AppError } from "../lib/errors.js";
import type { Logger } from "../lib/logger.js";

const TYPE_BASE = "https://audit-review.dev/problems/";

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

const LOCATIONS = new Set(["query", "path", "header", "body"]);

/** `/query/limit` → query + limit; `/body/filters/audit_results` → body + filters.audit_results. */
function toIssue(issue: ValidatorIssue): ProblemIssue {
  const parts = (issue.path ?? "").replace(/^\./, "").split(/[/.]/).filter(Boolean);
  // the validator reports path parameters under `params` and headers under `headers`
  const first = parts[0] === "headers" ? "header" : parts[0] === "params" ? "path" : parts[0];
  const location = (first && LOCATIONS.has(first) ? first : "body") as ProblemIssue["location"];
  const rest = first && LOCATIONS.has(first) ? parts.slice(1) : parts;
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

function describe(issues: ProblemIssue[]): string {
  return issues
    .map((i) => `${i.location === "body" ? "body" : `${i.location} parameter`} ${i.name}: ${i.message}`)
    .join("; ");
}

/** Maps anything thrown to a problem: our errors, the validator's, body-parser's; else a 500. */
export function problemHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    if (res.headersSent) {
      logger.error({ request_id: req.requestId, err: errSummary(err) }, "error after response started");
      res.destroy();
      return;
    }
    if (err instanceof AppError) return sendProblem(req, res, err);
    const e = (err ?? {}) as HttpishError;
    const status = e.status ?? e.statusCode;
    if (e.type === "entity.parse.failed") {
      return sendProblem(req, res, new AppError(400, "VALIDATION_ERROR", "Invalid request", "body: is not valid JSON", [
        { location: "body", name: "body", message: "is not valid JSON" },
      ]));
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
      const issues = e.errors.map(toIssue);
      return sendProblem(req, res, new AppError(400, "VALIDATION_ERROR", "Invalid request", describe(issues), issues));
    }
    logger.error({ request_id: req.requestId, err: errSummary(err) }, "unhandled error");
    return sendProblem(req, res, new AppError(500, "INTERNAL_ERROR", "Internal error", "An unexpected error occurred."));
  };
}

/** What is safe to log of an error: its class, message and stack, never request data. */
function errSummary(err: unknown): Record<string, unknown> {
  if (err instanceof Error) {
    const extra = (err as HttpishError).errors;
    return { type: err.name, message: err.message, stack: err.stack, ...(extra ? { errors: extra } : {}) };
  }
  return { value: String(err) };
}

export const notFound: RequestHandler = (req, res) => {
  sendProblem(req, res, new AppError(404, "NOT_FOUND", "Not found", `No operation ${req.method} ${req.path}.`));
};
