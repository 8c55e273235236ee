// What keeps the webhook portal's pages and calls safe in a browser: a strict Content-Security-
// Policy (scripts and styles from this server only, no inline ones), framing only by the pages
// the operator allowed, the session cookie's flags, and the Origin check on every write.
import type { Request, Response } from "express";

/** The session cookie's name; its Path scopes it to one org's portal (`/portal/{org_id}`). */
export const SESSION_COOKIE = "ars_portal";

export interface PortalSecurity {
  /** CSP `frame-ancestors` sources (`'none'` unless ARS_PORTAL_FRAME_ANCESTORS allows pages). */
  frameAncestors: string;
  /** ARS_PUBLIC_URL's origin, else undefined (the request's own scheme and Host). */
  publicUrl: string | undefined;
}

/** What of a request tells where it was sent to and from (any request, validated or not). */
type Sent = Pick<Request, "protocol" | "get">;

/** The origin browsers reach this server at. */
export function ownOrigin(req: Sent, sec: PortalSecurity): string {
  return sec.publicUrl ?? `${req.protocol}://${req.get("host") ?? ""}`;
}

/**
 * Headers of every portal answer (pages, API calls, errors). `data:` images are allowed for the
 * stylesheet's inline SVG icons (form controls); nothing else may come from anywhere but here.
 */
export function setPortalHeaders(res: Response, sec: PortalSecurity, { cache = false } = {}): void {
  res.setHeader(
    "Content-Security-Policy",
    `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; ` +
      `form-action 'self'; base-uri 'none'; frame-ancestors ${sec.frameAncestors}`,
  );
  // older browsers know only X-Frame-Options, which cannot list pages: it goes with 'none'
  if (sec.frameAncestors === "'none'") res.setHeader("X-Frame-Options", "DENY");
  res.setHeader("X-Content-Type-Options", "nosniff");
  // A link's secret in the address bar must not travel to another site in a Referer. Not
  // `no-referrer`: under it browsers send `Origin: null` on the page's own writes, which the
  // Origin check must be able to read.
  res.setHeader("Referrer-Policy", "same-origin");
  res.setHeader("Cross-Origin-Opener-Policy", "same-origin");
  res.setHeader("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()");
  if (!cache) res.setHeader("Cache-Control", "no-store");
}

/** A write must come from a page of this server: the browser's Origin names it (SameSite is the other half). */
export function writeFromOwnOrigin(req: Sent, sec: PortalSecurity): boolean {
  return req.get("origin") === ownOrigin(req, sec);
}

/** The session cookie's value, if the request carries one. */
export function sessionCookieOf(req: Sent): string | undefined {
  for (const part of (req.get("cookie") ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Sets (or with `maxAgeSeconds` 0, clears) the session cookie for one org's portal. */
export function setSessionCookie(req: Sent, res: Response, sec: PortalSecurity, orgId: string, value: string, maxAgeSeconds: number): void {
  const secure = ownOrigin(req, sec).startsWith("https:");
  res.append(
    "Set-Cookie",
    `${SESSION_COOKIE}=${value}; Path=/portal/${encodeURIComponent(orgId)}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure ? "; Secure" : ""}`,
  );
}
