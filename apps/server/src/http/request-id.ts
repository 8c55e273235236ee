import { randomFillSync } from "node:crypto";
import type { RequestHandler } from "express";

const SANE = /^[\x21-\x7e]{1,128}$/;

const ID_BYTES = 12;
const BATCH = 256;
const pool = Buffer.alloc(ID_BYTES * BATCH);
let hex = "";
let next = BATCH;

/**
 * `req_` and 96 random bits as 24 hex digits. The random bytes are drawn 256 ids at a time and
 * hex-encoded once (as crypto.randomUUID batches its entropy): one `randomBytes(12)` and its
 * `toString("hex")` per request cost more than the rest of this middleware.
 */
export function newRequestId(): string {
  if (next === BATCH) {
    hex = randomFillSync(pool).toString("hex");
    next = 0;
  }
  const at = next++ * ID_BYTES * 2;
  return `req_${hex.slice(at, at + ID_BYTES * 2)}`;
}

/** Every response carries X-Request-Id; a caller's own is echoed when it is sane. */
export const requestId: RequestHandler = (req, res, next) => {
  const given = req.headers["x-request-id"];
  req.requestId = typeof given === "string" && SANE.test(given) ? given : newRequestId();
  res.setHeader("X-Request-Id", req.requestId);
  next();
};
