import { idempotency } from "./http/idempotency.js";
import type { SecretBox } from "./lib/secret-box.js";
import express, { type Express } from "express";
import type { Contract } from "./contract/contract.js";
import type { Database } from "./db/client.js";
import { accessLog } from "./http/access-log.js";
import { authenticate } from "./http/auth.js";
import { docsBrowserRoutes, docsRoutes, loadDocs } from "./http/docs.js";
import { jsonBody } from "./http/json-body.js";
import { notFound, problemHandler } from "./http/problem.js";
import { rateLimiter } from "./http/rate-limit.js";
import { requestId } from "./http/request-id.js";
import { requestMetrics } from "./http/request-metrics.js";
import type { RequestDurations } from "./metrics/http-requests.js";
import { contractValidator } from "./http/validator.js";
import type { Logger } from "./lib/logger.js";
import { codingEvaluationsRoutes } from "./routes/coding-evaluations.routes.js";
import { eventsRoutes } from "./routes/events.routes.js";
import { internalRoutes } from "./routes/internal.routes.js";
import { questionSetsRoutes } from "./routes/question-sets.routes.js";
import { webhookDeliveriesRoutes } from "./routes/webhook-deliveries.routes.js";
import { webhookEndpointsRoutes } from "./routes/webhook-endpoints.routes.js";
import { webhookListenersRoutes } from "./routes/webhook-listeners.routes.js";
import { loadPortalAssets } from "./http/portal-assets.js";
import { portalRoutes } from "./http/portal.js";
import type { PortalObserver } from "./metrics/portal.js";
import type { RateLimitObserver } from "./metrics/rate-limit.js";
import { portalSessionsRoutes } from "./routes/portal-sessions.routes.js";
import type { Services } from "./services/index.js";

export interface AppDeps {
  db: Database;
  services: Services;
  /** seals stored idempotent responses (they may carry a signing secret) */
  secretBox: SecretBox;
  /** openapi.yaml, read once (contract/contract.ts) */
  contract: Contract;
  logger: Logger;
  docsDir: string;
  validateResponses: boolean;
  bodyLimitBytes: number;
  rateLimitPerMinute: number;
  /** request durations are recorded here when metrics are on */
  requestDurations?: RequestDurations;
  /** the webhook portal: its built files (apps/portal/dist unless given), who may frame it, the public origin */
  portal: { dir?: string; frameAncestors: string; publicUrl: string | undefined };
  /** portal links and sessions are counted here when metrics are on */
  portalObserver?: PortalObserver;
  /** the rate limit's statements are counted here when metrics are on */
  rateLimitObserver?: RateLimitObserver;
}

/**
 * The HTTP app, without listening. Order matters: request id → access log → the portal's pages
 * and its API gate (a session cookie instead of a token, http/portal.ts) → auth (before any
 * resource work; the contract's `security: []` operations pass) → rate limit → body → contract
 * validation → idempotency keys → routes (the large lists first) → problems.
 */
export function buildApp(d: AppDeps): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  // Paths are case-sensitive (RFC 3986), as in the contract and in the auth middleware's
  // operation index; the routers are created case-sensitive too.
  app.set("case sensitive routing", true);
  if (d.requestDurations) app.use(requestMetrics(d.requestDurations));
  app.use(requestId);
  app.use(accessLog(d.logger));
  app.get("/", (_req, res) => {
    res.redirect(302, "/docs");
  });
  const docs = loadDocs(d.docsDir);
  app.use(docsBrowserRoutes(docs));
  const portalSecurity = { frameAncestors: d.portal.frameAncestors, publicUrl: d.portal.publicUrl };
  const portal = portalRoutes({
    service: d.services.portalSessions,
    contract: d.contract,
    assets: loadPortalAssets(d.portal.dir),
    security: portalSecurity,
    logger: d.logger,
    observer: d.portalObserver,
  });
  // Only /portal paths enter the portal's router; every other request passes with one string test.
  app.use((req, res, next) => (req.url.startsWith("/portal") ? portal.pages(req, res, next) : next()));
  app.use(portal.apiGate);
  app.use(authenticate(d.contract, d.services.tokens.verify));
  if (d.rateLimitPerMinute > 0) app.use(rateLimiter(d.rateLimitPerMinute, d.services.rateLimits, d.logger, d.rateLimitObserver));
  app.use(jsonBody(d.bodyLimitBytes));
  app.use(contractValidator(d.contract, d.validateResponses));
  app.use(idempotency({ service: d.services.idempotency, logger: d.logger }));
  // The two large lists first: every request walks the router's layers in order until one
  // matches, and theirs are the busiest paths (the paths are disjoint, so order changes nothing else).
  app.use(questionSetsRoutes(d.services.questionSets));
  app.use(codingEvaluationsRoutes(d.services.codingEvaluations));
  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.get("/readyz", async (_req, res) => {
    try {
      await d.db.query("SELECT 1");
      res.json({ status: "ready" });
    } catch {
      res.status(503).json({ status: "database unreachable" });
    }
  });
  app.use(docsRoutes(docs));
  app.use(webhookEndpointsRoutes(d.services));
  app.use(webhookDeliveriesRoutes(d.services.webhookDeliveries));
  app.use(eventsRoutes(d.services.events));
  app.use(webhookListenersRoutes(d.services));
  app.use(portalSessionsRoutes({ service: d.services.portalSessions, security: portalSecurity, logger: d.logger, observer: d.portalObserver }));
  app.use(internalRoutes(d.services));
  app.use(notFound);
  app.use(problemHandler(d.logger));
  return app;
}
