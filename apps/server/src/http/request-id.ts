import { randomBytes } from "node:crypto";
import type { RequestHandler } from "express";

const SANE = /^[\x21-\x7e]{1,128}$/;

/** Every response carries X-Request-Id; a caller's own is echoed when it is sane. */
export const requestId: RequestHandler = (req, res, next) => {
  const given = req.get("x-request-id");
  req.requestId = given && SANE.test(given) ? given : `req_${randomBytes(12).toString("hex")}`;
  res.setHeader("X-Request-Id", req.requestId);
  next();
};
