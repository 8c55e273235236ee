import type { RequestHandler } from "express";
import { InsufficientScopeError, UnauthenticatedError } from "../lib/errors.js";
import type { AuthContext } from "./context.js";
import type { Contract } from "../contract/contract.js";
import { operationOf } from "./operations.js";

export type TokenVerifier = (token: string) => Promise<AuthContext | null>;

// RFC 6750 §2.1: "Bearer" 1*SP b64token; the scheme name is case-insensitive (RFC 7235 §2.1).
const BEARER = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i;

/**
 * Authenticates and authorizes every contract operation before any other work: the token
 * decides the org, the contract decides the scope. Unknown routes pass through to the 404, and
 * operations the contract declares with `security: []` pass without a token. A call of the
 * webhook portal arrives already authenticated by its session cookie (http/portal.ts, which
 * alone sets `req.auth` before this): its scopes are checked the same way, and no bearer token
 * is read for it.
 */
export function authenticate(contract: Contract, verify: TokenVerifier): RequestHandler {
  return async (req, _res, next) => {
    const op = operationOf(contract, req)?.operation;
    // named for the access log and the metrics, public operations too
    if (op) req.operationId = op.operationId;
    if (!op || op.public) return next();
    const match = req.auth ? null : BEARER.exec(req.get("authorization") ?? "");
    const auth = req.auth ?? (match ? await verify(match[1]!) : null);
    if (!auth) throw new UnauthenticatedError();
    const missing = op.requiredScopes.filter((s) => !auth.scopes.includes(s));
    if (missing.length) throw new InsufficientScopeError(op.requiredScopes);
    req.auth = auth;
    next();
  };
}
