/** What the HTTP layer learns about a request before handlers run. */
export interface AuthContext {
  orgId: string;
  tokenId: string;
  scopes: readonly string[];
}

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
