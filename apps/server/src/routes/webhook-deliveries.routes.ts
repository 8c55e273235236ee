import { Router } from "express";
import type { operations } from "@audit-review/api-types/internal";
import { authOf } from "../http/context.js";
import { listEnvelope } from "../http/pagination.js";
import { presentWebhookDelivery } from "../presenters/webhook-delivery.presenter.js";
import type { WebhookDeliveriesService } from "../services/webhook-deliveries.service.js";

type ListQuery = NonNullable<operations["listWebhookDeliveries"]["parameters"]["query"]>;

export function webhookDeliveriesRoutes(svc: WebhookDeliveriesService): Router {
  return Router({ caseSensitive: true }).get("/v2/webhook_deliveries", async function listWebhookDeliveries(req, res) {
    const page = await svc.listWebhookDeliveries(authOf(req), req.query as ListQuery);
    res.json(listEnvelope(page.rows.map(presentWebhookDelivery), page.hasMore, page.total));
  });
}
