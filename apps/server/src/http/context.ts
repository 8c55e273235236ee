import type { Request } from "express";
import type { AuthContext } from "../auth/context.js";

export type { AuthContext } from "../auth/context.js";

declare global {
  namespace Express {
    interface Request {
      requestId: string;
      auth?: AuthContext;
      operationId?: string;
    }
  }
}

/** For handlers behind `authenticate`: the auth context is always there. */
export function authOf(req: Express.Request): AuthContext {
  if (!req.auth) throw new Error("handler reached without authentication");
  return req.auth;
}

/**
 * A request the contract validator has already checked (it runs before every handler): its body,
 * query and path parameters have the contract's types. Handlers declare what they receive with
 * it instead of asserting `req.body as …`.
 */
export type Validated<Body = unknown, Query = unknown, Params = Record<string, string>> = Request<Params, unknown, Body, Query>;
