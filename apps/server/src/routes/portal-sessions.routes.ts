import { Router } from "express";
import type { CreatePortalSessionRequest } from "@audit-review/api-types/internal";
import { authOf, type Validated } from "../http/context.js";
import { ownOrigin, type PortalSecurity } from "../http/portal-security.js";
import type { Logger } from "../lib/logger.js";
import type { PortalObserver } from "../metrics/portal.js";
import { presentPortalSession } from "../presenters/portal-session.presenter.js";
import type { PortalSessionsService } from "../services/portal-sessions.service.js";

export interface PortalSessionsRouteDeps {
  service: PortalSessionsService;
  security: PortalSecurity;
  logger: Logger;
  observer?: PortalObserver | undefined;
}

export function portalSessionsRoutes({ service, security, logger, observer }: PortalSessionsRouteDeps): Router {
  return Router({ caseSensitive: true }).post("/v2/portal_sessions", async function createPortalSession(req: Validated<CreatePortalSessionRequest | undefined>, res) {
    const auth = authOf(req);
    const link = await service.createPortalSession(auth, req.body ?? {}, ownOrigin(req, security));
    // the link's secret is in its URL: never logged
    logger.info({ org_id: auth.orgId, read_only: link.readOnly, expires_at: link.expiresAt.toISOString() }, "portal link created");
    observer?.linkCreated(link.readOnly);
    res.status(201).json(presentPortalSession(link));
  });
}
