// The webhook portal at /portal (README "Portal"). Pages, before any bearer authentication:
//
//   GET  /portal/assets/<file>            the built script and stylesheet (public, immutable)
//   GET  /portal/{org_id}/start?link=…    spends a single-use link, sets the session cookie
//   POST /portal/{org_id}/sign-out        ends the session (Origin-checked)
//   GET  /portal/{org_id}[/…]             the page, for a live session; else a plain page
//
// and the API gate: /portal/{org_id}/api/v2/… is the public API with the session cookie instead
// of a bearer token, limited to the portal's operations, every write Origin-checked.
import { Router, type NextFunction, type Request, type RequestHandler, type Response } from "express";
import type { Contract } from "../contract/contract.js";
import { AppError, NotFoundError, UnauthenticatedError } from "../lib/errors.js";
import type { Logger } from "../lib/logger.js";
import type { PortalObserver } from "../metrics/portal.js";
import type { PortalAuth, PortalSessionsService, SessionCheck } from "../services/portal-sessions.service.js";
import { operationOf } from "./operations.js";
import { sendPortalAsset, type PortalAssets } from "./portal-assets.js";
import { PAGES, refusedLinkPage, renderPlainPage, type PlainPage } from "./portal-pages.js";
import { sessionCookieOf, setPortalHeaders, setSessionCookie, writeFromOwnOrigin, type PortalSecurity } from "./portal-security.js";
import { sendProblem } from "./problem.js";

/** The operations the portal's page calls; anything else under /portal/{org_id}/api answers 404. */
export const PORTAL_OPERATIONS: ReadonlySet<string> = new Set([
  "listWebhookEndpoints",
  "createWebhookEndpoint",
  "getWebhookEndpoint",
  "updateWebhookEndpoint",
  "deleteWebhookEndpoint",
  "rotateWebhookEndpointSecret",
  "sendTestWebhookEvent",
  "recoverWebhookDeliveries",
  "listWebhookDeliveries",
  "getWebhookDelivery",
  "listWebhookDeliveryAttempts",
  "retryWebhookDelivery",
  "listEvents",
  "getEvent",
  "listQuestionSets",
]);

export interface PortalDeps {
  service: PortalSessionsService;
  contract: Contract;
  assets: PortalAssets;
  security: PortalSecurity;
  logger: Logger;
  observer?: PortalObserver | undefined;
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
const API = /^\/portal\/([^/]+)\/api(\/.*)$/;

const originRefused = () => new AppError(403, "ORIGIN_NOT_ALLOWED", "Origin not allowed", "A portal write must come from a page of this server (its Origin header names it).");
const sessionEnded = () => new UnauthenticatedError("The portal session has ended (expired, signed out or withdrawn); open a new portal link.");

/** What the page needs to know of its session, in a `<meta>` of the page (no inline script). */
function describeSession(auth: PortalAuth): string {
  const json = JSON.stringify({ org_id: auth.orgId, read_only: auth.readOnly, expires_at: auth.expiresAt.toISOString(), scopes: auth.scopes });
  return json.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const safeDecode = (s: string): string => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

export function portalRoutes(d: PortalDeps): { pages: Router; apiGate: RequestHandler } {
  const { service, assets, security, logger, observer } = d;

  function plain(res: Response, page: PlainPage): void {
    setPortalHeaders(res, security);
    res.status(page.status).type("html").send(renderPlainPage(page, assets.stylesheet));
  }

  /** A session check's outcome, logged and counted once when it is the moment a session ends. */
  async function session(orgId: string, req: Request): Promise<PortalAuth | null> {
    const check: SessionCheck = await service.checkSession(orgId, sessionCookieOf(req));
    if ("ended" in check) {
      logger.info({ org_id: check.orgId, portal_session_id: check.sessionId, reason: check.ended }, "portal session ended");
      observer?.sessionEnded(check.ended);
    }
    return "ok" in check ? check.ok : null;
  }

  const pages = Router({ caseSensitive: true, strict: false });
  pages.get("/portal/assets/:file", (req, res) => {
    const asset = assets.files.get(req.path);
    if (!asset) return plain(res, PAGES.notFound);
    sendPortalAsset(req, res, asset);
  });
  pages.get("/portal", (_req, res) => plain(res, PAGES.noLink));

  pages.get("/portal/:org_id/start", async (req, res) => {
    const orgId = req.params.org_id;
    const link = typeof req.query.link === "string" ? req.query.link : "";
    const started = await service.startSession(orgId, link);
    if ("refused" in started) {
      logger.info({ org_id: orgId, reason: started.refused }, "portal link refused");
      observer?.linkRefused(started.refused);
      return plain(res, refusedLinkPage(started.refused));
    }
    const s = started.ok;
    setSessionCookie(req, res, security, orgId, started.cookie, Math.max(1, Math.round((s.expiresAt.getTime() - Date.now()) / 1000)));
    logger.info({ org_id: orgId, portal_session_id: s.sessionId, read_only: s.readOnly, expires_at: s.expiresAt.toISOString() }, "portal session started");
    observer?.sessionStarted(s.readOnly);
    // A page that moves on by itself, not a redirect: browsers withhold a SameSite=Strict cookie
    // from a redirect chain that began on another site (the link was clicked there), but send it
    // on a navigation this page starts.
    plain(res, PAGES.starting(`/portal/${encodeURIComponent(orgId)}/`));
  });

  pages.post("/portal/:org_id/sign-out", async (req, res) => {
    if (!writeFromOwnOrigin(req, security)) return plain(res, PAGES.crossOrigin);
    const auth = await session(req.params.org_id, req);
    if (auth && (await service.endSession(auth.sessionId))) {
      logger.info({ org_id: auth.orgId, portal_session_id: auth.sessionId, reason: "signed_out" }, "portal session ended");
      observer?.sessionEnded("signed_out");
    }
    setSessionCookie(req, res, security, req.params.org_id, "", 0);
    plain(res, PAGES.signedOut);
  });

  // The page itself, at the org's root and every path of its own (deep links, reloads).
  pages.get(["/portal/:org_id", "/portal/:org_id/*rest"], async (req, res, next) => {
    if (API.test(req.path)) return next();
    const auth = await session(String(req.params.org_id), req);
    if (!auth) return plain(res, PAGES.sessionEnded);
    setPortalHeaders(res, security);
    res.status(200).type("html").send(assets.shell.replace("{{session}}", describeSession(auth)));
  });
  pages.all(["/portal/:org_id/start", "/portal/:org_id/sign-out"], (_req, res) => plain(res, PAGES.notFound));

  /**
   * /portal/{org_id}/api/v2/… → /v2/…, authenticated by the session cookie (never by a bearer
   * token), for the portal's operations only. Writes must come from this server's own pages.
   */
  const apiGate: RequestHandler = async (req: Request, res: Response, next: NextFunction) => {
    const m = req.url.startsWith("/portal/") ? API.exec(req.path) : null;
    if (!m) return next();
    setPortalHeaders(res, security);
    const auth = await session(safeDecode(m[1]!), req);
    if (!auth) return sendProblem(req, res, sessionEnded());
    if (!SAFE_METHODS.has(req.method) && !writeFromOwnOrigin(req, security)) return sendProblem(req, res, originRefused());
    // From here on the request is the public API's own: the validator reads originalUrl too.
    const query = req.url.indexOf("?");
    req.url = m[2]! + (query >= 0 ? req.url.slice(query) : "");
    req.originalUrl = req.url;
    const op = operationOf(d.contract, req)?.operation;
    if (!op || !PORTAL_OPERATIONS.has(op.operationId)) return sendProblem(req, res, new NotFoundError(`No operation ${req.method} ${req.path} in the portal.`));
    req.auth = { orgId: auth.orgId, tokenId: auth.tokenId, scopes: auth.scopes };
    next();
  };
  return { pages, apiGate };
}
