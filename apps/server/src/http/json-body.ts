import express, { type Request, type RequestHandler } from "express";

const empty = new WeakSet<Request>();

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
        if (buf.length === 0) empty.add(req as Request);
      },
    }),
    (req, _res, next) => {
      if (empty.has(req)) req.body = undefined;
      next();
    },
  ];
}
