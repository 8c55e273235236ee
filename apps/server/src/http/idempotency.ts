// Idempotency-Key on every public POST (DESIGN.md §7, Stripe's semantics). The first request
// with a key claims it; its response (status, Location, body) is stored with the key, the body
// sealed because it may carry a signing secret. A repeat with the same body replays that
// response; with another body it is refused (422); while the first still runs, 409.
import { createHash } from "node:crypto";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import { IdempotencyKeyInUseError, IdempotencyKeyReusedError } from "../lib/errors.js";
import type { Logger } from "../lib/logger.js";
import type { SecretBox } from "../lib/secret-box.js";
import type { IdempotencyKeysRepo } from "../repos/idempotency-keys.repo.js";
import { authOf } from "./context.js";

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** The response headers a replay repeats besides status and body. */
const REPLAYED_HEADERS = ["content-type", "location"];

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** JSON with object keys sorted: the same parameters in another order are the same request. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

export interface IdempotencyDeps {
  keys: IdempotencyKeysRepo;
  secretBox: SecretBox;
  logger: Logger;
}

export function idempotency({ keys, secretBox, logger }: IdempotencyDeps): RequestHandler {
  return async function idempotencyKey(req: Request, res: Response, next: NextFunction) {
    const key = req.get("idempotency-key");
    if (req.method !== "POST" || key === undefined || req.path.startsWith("/v2/internal/")) return next();
    const { orgId } = authOf(req);
    const keyHash = sha256(key);
    const requestHash = sha256(`${req.method} ${req.path}\n${canonical(req.body ?? null)}`);

    if (!(await keys.claim(orgId, keyHash, requestHash, IDEMPOTENCY_TTL_MS))) {
      const stored = await keys.find(orgId, keyHash);
      // gone between claim and read (expired or released): the client may simply retry
      if (!stored || stored.status !== "completed") throw new IdempotencyKeyInUseError();
      if (stored.request_hash !== requestHash) throw new IdempotencyKeyReusedError();
      const headers = (stored.response_headers ?? {}) as Record<string, string>;
      for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
      res.setHeader("Idempotent-Replayed", "true");
      res.status(stored.response_status ?? 200).send(secretBox.open(stored.response_body_enc ?? new Uint8Array()));
      return;
    }

    // The response is stored before it is sent, so a repeat never sees the key still running
    // after the caller already has its answer.
    const send = res.send.bind(res);
    let captured = false;
    res.send = function storeThenSend(body?: unknown) {
      if (captured) return send(body);
      captured = true;
      const text = typeof body === "string" ? body : Buffer.isBuffer(body) ? body.toString("utf8") : JSON.stringify(body ?? "");
      const status = res.statusCode;
      const save =
        status >= 500
          ? keys.release(orgId, keyHash)
          : keys.complete(orgId, keyHash, {
              status,
              headers: Object.fromEntries(
                REPLAYED_HEADERS.flatMap((name) => {
                  const value = res.getHeader(name);
                  return value === undefined ? [] : [[name, String(value)]];
                }),
              ),
              bodyEnc: secretBox.seal(text),
            });
      save.then(
        () => send(body),
        (error: unknown) => {
          logger.error({ err: error, request_id: req.requestId }, "idempotency key could not be stored");
          keys.release(orgId, keyHash).catch(() => undefined);
          send(body);
        },
      );
      return res;
    };
    next();
  };
}
