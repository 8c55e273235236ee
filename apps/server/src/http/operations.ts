import type { Request } from "express";
import type { Contract, OperationMatch } from "../contract/contract.js";

const matched = new WeakMap<Request, OperationMatch | null>();

/**
 * The contract operation a request names, matched once per request (authorization and the raw
 * request rules both ask) on `req.path`: the path as sent, still percent-encoded.
 */
export function operationOf(contract: Contract, req: Request): OperationMatch | undefined {
  let m = matched.get(req);
  if (m === undefined) matched.set(req, (m = contract.match(req.method, req.path) ?? null));
  return m ?? undefined;
}
