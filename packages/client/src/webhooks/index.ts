// Receiver-side helpers for the webhooks the Audit Review Service sends: Standard Webhooks
// signature verification (https://www.standardwebhooks.com), the legacy `x-signature-256`
// header, and typed parsing of the `standard_v1` body of `audit.completed`.
import { createHmac, timingSafeEqual } from "node:crypto";
import { Webhook } from "standardwebhooks";
import type { AuditCompletedPayload, AuditResponseItem } from "@audit-review/api-types";
import { isRecord } from "../guards.js";

export type { AuditCompletedPayload, AuditResponseItem };

/** Request headers as a fetch `Headers`, or a plain object such as Node's `req.headers`. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/** The raw request body exactly as received (not a parsed object): a string or bytes. */
export type WebhookBody = string | Uint8Array;

/** One secret, or several while you rotate (any of them may match). */
export type WebhookSecrets = { secret: string; secrets?: never } | { secrets: readonly string[]; secret?: never };

export type VerifyWebhookOptions = WebhookSecrets & {
  headers: WebhookHeaders;
  body: WebhookBody;
  /** How far `webhook-timestamp` may be from now, either way. Default 300 (5 minutes). */
  toleranceSeconds?: number;
  /** The current time; only for tests and replays of recorded requests. */
  now?: Date;
};

export interface VerifiedWebhook {
  /** `webhook-id`: the event id, identical on every retry; deduplicate on it. */
  id: string;
  /** `webhook-timestamp`: when this attempt was signed. */
  timestamp: Date;
  /** The verified body, decoded as UTF-8. Parse it with {@link parseAuditCompleted}. */
  body: string;
}

export type WebhookVerificationReason =
  | "missing_header"
  | "invalid_header"
  | "timestamp_too_old"
  | "timestamp_too_new"
  | "no_matching_signature";

/** The request is not a genuine, fresh delivery: answer it with 400 (or 401) and drop it. */
export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
  constructor(
    readonly reason: WebhookVerificationReason,
    message: string,
  ) {
    super(message);
  }
}

/** The body is not an `audit.completed` `standard_v1` payload. */
export class WebhookPayloadError extends Error {
  override readonly name = "WebhookPayloadError";
  constructor(
    /** Where in the body, e.g. `data.auditId` or `responses[2].questionId`. */
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
  }
}

const DEFAULT_TOLERANCE_SECONDS = 5 * 60;
const decoder = new TextDecoder();

/**
 * Verifies a Standard Webhooks request: `webhook-id`, `webhook-timestamp` within
 * `toleranceSeconds` of now, and at least one `v1,` value of `webhook-signature` (several are sent
 * during a secret rotation) equal, in constant time, to the HMAC-SHA256 of
 * `{id}.{timestamp}.{body}` under one of your secrets. Returns the id, time and body; throws
 * {@link WebhookVerificationError} otherwise.
 *
 * Pass the raw body: a re-serialized `JSON.stringify(req.body)` does not verify.
 */
export function verifyWebhook(options: VerifyWebhookOptions): VerifiedWebhook {
  const webhooks = secretsOf(options).map(standardWebhook);
  const body = bodyText(options.body);
  const id = header(options.headers, "webhook-id");
  const timestampText = header(options.headers, "webhook-timestamp");
  const signatureHeader = header(options.headers, "webhook-signature");

  if (!/^\d{1,12}$/.test(timestampText)) {
    throw new WebhookVerificationError("invalid_header", "webhook-timestamp is not unix seconds");
  }
  const timestamp = Number(timestampText);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!Number.isFinite(tolerance) || tolerance < 0) {
    throw new TypeError("toleranceSeconds must be a non-negative number");
  }
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  if (now - timestamp > tolerance) {
    throw new WebhookVerificationError("timestamp_too_old", "webhook-timestamp is too old");
  }
  if (timestamp - now > tolerance) {
    throw new WebhookVerificationError("timestamp_too_new", "webhook-timestamp is in the future");
  }

  const signedAt = new Date(timestamp * 1000);
  const received = signatureHeader
    .split(" ")
    .filter((part) => part.startsWith("v1,"))
    .map((part) => Buffer.from(part.slice(3), "utf8"));
  for (const webhook of webhooks) {
    // standardwebhooks' sign() is the reference implementation of the signed content and key.
    const expected = Buffer.from(webhook.sign(id, signedAt, body).slice(3), "utf8");
    // Every candidate is compared, with no early exit on a match, so timing reveals nothing.
    let matched = false;
    for (const candidate of received) matched = constantTimeEqual(candidate, expected) || matched;
    if (matched) return { id, timestamp: signedAt, body };
  }
  throw new WebhookVerificationError("no_matching_signature", "no webhook-signature value matches a secret");
}

export type VerifyLegacySignatureOptions = WebhookSecrets & {
  headers: WebhookHeaders;
  body: WebhookBody;
};

/**
 * Verifies the legacy `x-signature-256: sha256=<hex>` header (sent when the endpoint has
 * `signing.legacy_signature`): the HMAC-SHA256 of the raw body keyed with the whole `whsec_…`
 * secret string. It carries no timestamp, so it does not protect against replays: prefer
 * {@link verifyWebhook}. Returns the body; throws {@link WebhookVerificationError} otherwise.
 */
export function verifyLegacySignature(options: VerifyLegacySignatureOptions): { body: string } {
  const secrets = secretsOf(options);
  const bytes = bodyBytes(options.body);
  const value = header(options.headers, "x-signature-256");
  const match = /^sha256=([0-9a-fA-F]{64})$/.exec(value.trim());
  if (!match) throw new WebhookVerificationError("invalid_header", "x-signature-256 is not sha256=<64 hex digits>");
  const received = Buffer.from(match[1]!.toLowerCase(), "hex");
  let matched = false;
  for (const secret of secrets) {
    const expected = createHmac("sha256", Buffer.from(secret, "utf8")).update(bytes).digest();
    matched = constantTimeEqual(received, expected) || matched;
  }
  if (!matched) throw new WebhookVerificationError("no_matching_signature", "x-signature-256 does not match a secret");
  return { body: decoder.decode(bytes) };
}

/**
 * Parses and checks an `audit.completed` `standard_v1` body (a JSON string, bytes, or an already
 * parsed value). Fields the endpoint did not select (`data.documentId`, `data.result`,
 * `responses`, and each response's `query`, `answer`, `context`) are simply absent. Unknown extra
 * fields are kept, so a newer server does not break an older receiver. Throws
 * {@link WebhookPayloadError} naming the first offending field.
 */
export function parseAuditCompleted(input: WebhookBody | unknown): AuditCompletedPayload {
  let value: unknown = input;
  if (typeof input === "string" || input instanceof Uint8Array) {
    try {
      value = JSON.parse(typeof input === "string" ? input : decoder.decode(input));
    } catch {
      throw new WebhookPayloadError("$", "is not valid JSON");
    }
  }
  checkAuditCompleted(value);
  return value;
}

/** Throws {@link WebhookPayloadError} at the first field that does not fit the payload's type. */
function checkAuditCompleted(value: unknown): asserts value is AuditCompletedPayload {
  const root = object(value, "$");
  if (root.type !== "audit.completed") throw new WebhookPayloadError("type", 'must be "audit.completed"');
  if (typeof root.timestamp !== "string" || Number.isNaN(Date.parse(root.timestamp))) {
    throw new WebhookPayloadError("timestamp", "must be an RFC 3339 date-time");
  }
  const data = object(root.data, "data");
  string(data.auditId, "data.auditId");
  string(data.questionSetId, "data.questionSetId");
  if ("documentId" in data) nullableString(data.documentId, "data.documentId");
  if ("result" in data) string(data.result, "data.result");
  if ("responses" in root) {
    if (!Array.isArray(root.responses)) throw new WebhookPayloadError("responses", "must be an array");
    root.responses.forEach((item, i) => {
      const at = `responses[${i}]`;
      const response = object(item, at);
      string(response.questionId, `${at}.questionId`);
      if ("query" in response) string(response.query, `${at}.query`);
      if ("answer" in response) nullableString(response.answer, `${at}.answer`);
      if ("context" in response) nullableString(response.context, `${at}.context`);
    });
  }
}

function object(value: unknown, path: string): Record<string, unknown> {
  if (!isRecord(value) || Array.isArray(value)) {
    throw new WebhookPayloadError(path, "must be an object");
  }
  return value;
}

function string(value: unknown, path: string): void {
  if (typeof value !== "string") throw new WebhookPayloadError(path, "must be a string");
}

function nullableString(value: unknown, path: string): void {
  if (value !== null && typeof value !== "string") throw new WebhookPayloadError(path, "must be a string or null");
}

function secretsOf(options: WebhookSecrets): readonly string[] {
  const secrets = options.secrets ?? (options.secret === undefined ? [] : [options.secret]);
  if (secrets.length === 0 || secrets.some((s) => typeof s !== "string" || s.length === 0)) {
    throw new TypeError("pass secret (a whsec_… string) or secrets (a non-empty array of them)");
  }
  return secrets;
}

function standardWebhook(secret: string): Webhook {
  if (!secret.startsWith("whsec_")) throw new TypeError("a webhook secret starts with whsec_");
  try {
    return new Webhook(secret);
  } catch {
    // Never echo the secret itself.
    throw new TypeError("a webhook secret is whsec_ followed by base64");
  }
}

function bodyText(body: WebhookBody): string {
  if (typeof body === "string") return body;
  if (body instanceof Uint8Array) return decoder.decode(body);
  throw new TypeError(
    "body must be the raw request body (string or bytes), not a parsed object: e.g. express.raw({ type: 'application/json' })",
  );
}

function bodyBytes(body: WebhookBody): Uint8Array {
  if (body instanceof Uint8Array) return body;
  // A string is encoded; anything else makes bodyText throw its TypeError.
  return Buffer.from(bodyText(body), "utf8");
}

function header(headers: WebhookHeaders, name: string): string {
  let value: string | string[] | null | undefined;
  if (isHeaders(headers)) {
    value = headers.get(name);
  } else {
    const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
    value = key === undefined ? undefined : headers[key];
  }
  if (Array.isArray(value)) {
    if (value.length !== 1) throw new WebhookVerificationError("invalid_header", `${name} appears more than once`);
    value = value[0];
  }
  if (value === undefined || value === null || value === "") {
    throw new WebhookVerificationError("missing_header", `${name} header is missing`);
  }
  return value;
}

/** A fetch `Headers` (from any realm or polyfill: it is recognised by its methods), else a plain record. */
function isHeaders(headers: WebhookHeaders): headers is Headers {
  return typeof headers.get === "function" && typeof headers.has === "function";
}

function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  // Lengths are public (a base64 or hex HMAC-SHA256 has a fixed length); contents are compared in constant time.
  return a.length === b.length && timingSafeEqual(a, b);
}
