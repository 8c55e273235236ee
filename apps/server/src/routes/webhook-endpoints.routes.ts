import { Router } from "express";
import type { CreateWebhookEndpointRequest, operations } from "@audit-review/api-types/internal";
import { authOf } from "../http/context.js";
import { listEnvelope } from "../http/pagination.js";
import { presentCreatedWebhookEndpoint, presentWebhookEndpoint } from "../presenters/webhook-endpoint.presenter.js";
import type { WebhookEndpointsService } from "../services/webhook-endpoints.service.js";

type ListQuery = NonNullable<operations["listWebhookEndpoints"]["parameters"]["query"]>;

export function webhookEndpointsRoutes(svc: WebhookEndpointsService): Router {
  return Router({ caseSensitive: true })
    .get("/v2/webhook_endpoints", async function listWebhookEndpoints(req, res) {
      const page = await svc.listWebhookEndpoints(authOf(req), req.query as ListQuery);
      res.json(listEnvelope(page.rows.map(presentWebhookEndpoint), page.hasMore, page.total));
    })
    .post("/v2/webhook_endpoints", async function createWebhookEndpoint(req, res) {
      const { endpoint, secret } = await svc.createWebhookEndpoint(authOf(req), req.body as CreateWebhookEndpointRequest);
      res.status(201).location(`/v2/webhook_endpoints/${endpoint.id}`).json(presentCreatedWebhookEndpoint(endpoint, secret));
    });
}
