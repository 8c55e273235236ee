/** Who is calling: the org a verified token belongs to and what it may do. */
export interface AuthContext {
  orgId: string;
  tokenId: string;
  scopes: readonly string[];
}
