import type { PortalSession } from "@audit-review/api-types/internal";
import { iso } from "../lib/time.js";

/** A minted portal link: the only answer that carries its secret (inside `url`). */
export function presentPortalSession(link: { url: string; expiresAt: Date; readOnly: boolean; sessionDuration: number }): PortalSession {
  return { object: "portal_session", url: link.url, expires_at: iso(link.expiresAt), read_only: link.readOnly, session_duration: link.sessionDuration };
}
