// What the server told the page about its session, in a <meta> of the page (no inline script,
// and never a token: the session itself is an HttpOnly cookie the page cannot read).
import { createClient, type AuditReviewClient } from "@audit-review/client";

export interface PortalSession {
  org_id: string;
  read_only: boolean;
  expires_at: string;
  scopes: string[];
}

export function readSession(doc: Document = document): PortalSession {
  const raw = doc.querySelector<HTMLMetaElement>('meta[name="ars-portal-session"]')?.content;
  if (!raw) throw new Error("the page carries no portal session");
  const parsed: unknown = JSON.parse(raw);
  if (typeof parsed !== "object" || parsed === null) throw new Error("the portal session is not an object");
  const field = (name: string): unknown => Reflect.get(parsed, name);
  const scopes = field("scopes");
  return {
    org_id: String(field("org_id")),
    read_only: field("read_only") === true,
    expires_at: String(field("expires_at")),
    scopes: Array.isArray(scopes) ? scopes.map(String) : [],
  };
}

/** The portal's paths of this org: the pages, and the API the session cookie opens. */
export const portalBase = (s: PortalSession) => `/portal/${encodeURIComponent(s.org_id)}`;

/** The public API under the portal's path, authenticated by the session cookie. */
export function portalClient(s: PortalSession): AuditReviewClient {
  return createClient({ baseUrl: `${location.origin}${portalBase(s)}/api`, sessionCookie: true });
}
