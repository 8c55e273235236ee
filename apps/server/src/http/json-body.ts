import type { IncomingMessage } from "node:http";
import express, { type RequestHandler } from "express";

const empty = new WeakSet<IncomingMessage>();

/**
 * JSON bodies. body-parser turns an empty `application/json` body into `{}`, which an operation
 * whose body has no required field would accept as if the caller had sent one; an empty body is
 * kept absent instead, so the contract's `requestBody.required` answers 400 "body is required".
 */
export function jsonBody(limitBytes: number): RequestHandler[] {
  return [
    express.json({
      limit: limitBytes,
      type: ["application/json", "application/*+json"],
      verify: (req, _res, buf) => {
        if (buf.length === 0) empty.add(req);
      },
    }),
    (req, _res, next) => {
      if (empty.has(req)) req.body = undefined;
      next();
    },
  ];
}
