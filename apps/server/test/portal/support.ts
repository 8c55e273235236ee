// What the portal's tests do as a browser would: mint a link with a token, open it, keep the
// cookie it sets, and call the portal's pages and API with it (and with an Origin header on
// writes, as browsers send one).
import { createHash } from "node:crypto";
import type { PortalSession } from "@audit-review/api-types/internal";
import { expect } from "vitest";
import { remember } from "../harness/factories.js";
import type { TestServer } from "../harness/server.js";

export interface Opened {
  response: Response;
  html: string;
  /** `ars_portal=ps_…`, what the browser sends back; absent when no session started */
  cookie: string | undefined;
  /** the Set-Cookie header as sent */
  setCookie: string | null;
}

export async function mintLink(server: TestServer, token: string, body: Record<string, unknown> = {}): Promise<PortalSession> {
  const res = await server.raw("/v2/portal_sessions", { method: "POST", token, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const json: unknown = await res.json();
  expect(res.status, JSON.stringify(json)).toBe(201);
  const link = json as PortalSession;
  remember(new URL(link.url).searchParams.get("link") ?? undefined);
  return link;
}

export async function openLink(url: string): Promise<Opened> {
  const response = await fetch(url, { redirect: "manual" });
  const setCookie = response.headers.get("set-cookie");
  const cookie = setCookie ? setCookie.split(";")[0] : undefined;
  if (cookie) remember(cookie.slice(cookie.indexOf("=") + 1));
  return { response, html: await response.text(), cookie, setCookie };
}

/** A minted and opened link: the org's session cookie. */
export async function startSession(server: TestServer, token: string, body: Record<string, unknown> = {}): Promise<{ cookie: string; link: PortalSession }> {
  const link = await mintLink(server, token, body);
  const opened = await openLink(link.url);
  expect(opened.response.status, opened.html).toBe(200);
  return { cookie: opened.cookie!, link };
}

/** A call of the portal's API: `/portal/{org}/api` + path, with the cookie; writes carry the server's Origin unless told otherwise. */
export function portalCall(server: TestServer, orgId: string, cookie: string | undefined, path: string, init: { method?: string; body?: unknown; origin?: string | null; headers?: Record<string, string> } = {}): Promise<Response> {
  const method = init.method ?? "GET";
  const origin = init.origin === undefined ? (method === "GET" ? null : server.url) : init.origin;
  return fetch(`${server.url}/portal/${orgId}/api${path}`, {
    method,
    headers: {
      ...(cookie ? { cookie } : {}),
      ...(origin ? { origin } : {}),
      ...(init.body !== undefined ? { "content-type": "application/json" } : {}),
      ...init.headers,
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
}

/** The row of a link, by the secret in its URL (tests move its clock). */
export const linkHash = (url: string): string => createHash("sha256").update(new URL(url).searchParams.get("link")!).digest("hex");

/** The id of a token's row (to revoke it). */
export async function tokenId(server: TestServer, token: string): Promise<string> {
  const row = await server.server.db.prisma.apiToken.findUniqueOrThrow({ where: { token_hash: createHash("sha256").update(token).digest("hex") } });
  return row.id;
}

/** A page of ours must never hold inline script or style (the CSP refuses them anyway). */
export function expectNoInlineCode(html: string): void {
  expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
  expect(html).not.toMatch(/<style\b/i);
  expect(html).not.toMatch(/\sstyle=/i);
  expect(html).not.toMatch(/\son[a-z]+=/i);
  expect(html).not.toMatch(/at [\w.<>]+ \(|Error:|node_modules/);
}
