import type { IncomingMessage } from "node:http";
import express, { type RequestHandler } from "express";
import { ValidationErrors } from "../lib/errors.js";
import { jsonShapeProblem } from "./json-shape.js";

const empty = new WeakSet<IncomingMessage>();

/**
 * JSON bodies. body-parser turns an empty `application/json` body into `{}`, which an operation
 * whose body has no required field would accept as if the caller had sent one; an empty body is
 * kept absent instead, so the contract's `requestBody.required` answers 400 "body is required".
 * Before parsing, the raw text is checked for what JSON.parse would silently accept or what would
 * overwhelm a later walk (json-shape.ts): invalid UTF-8, duplicate property names, deep nesting.
 */
export function jsonBody(limitBytes: number): RequestHandler[] {
  return [
    express.json({
      limit: limitBytes,
      type: ["application/json", "application/*+json"],
      verify: (req, _res, buf) => {
        if (buf.length === 0) empty.add(req);
        const problem = jsonShapeProblem(buf);
        // body-parser passes an error carrying its own status through (400, not its default 403)
        if (problem) throw new ValidationErrors([{ location: "body", ...problem }]);
      },
    }),
    (req, _res, next) => {
      if (empty.has(req)) req.body = undefined;
      next();
    },
  ];
}
