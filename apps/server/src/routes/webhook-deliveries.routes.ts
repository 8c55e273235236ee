import { Router } from "express";
import type { operations } from "@audit-review/api-types/internal";
import { authOf } from "../http/context.js";
import { listEnvelope } from "../http/pagination.js";
import { presentWebhookDelivery, presentWebhookDeliveryAttempt } from "../presenters/webhook-delivery.presenter.js";
import type { WebhookDeliveriesService } from "../services/webhook-deliveries.service.js";

type ListQuery = NonNullable<operations["listWebhookDeliveries"]["parameters"]["query"]>;
type AttemptsQuery = NonNullable<operations["listWebhookDeliveryAttempts"]["parameters"]["query"]>;

export function webhookDeliveriesRoutes(svc: WebhookDeliveriesService): Router {
  const one = "/v2/webhook_deliveries/:delivery_id";
  return Router({ caseSensitive: true })
    .get("/v2/webhook_deliveries", async function listWebhookDeliveries(req, res) {
      const page = await svc.listWebhookDeliveries(authOf(req), req.query as ListQuery);
      res.json(listEnvelope(page.rows.map(presentWebhookDelivery), page.hasMore, page.total));
    })
    .get(one, async function getWebhookDelivery(req, res) {
      res.json(presentWebhookDelivery(await svc.getWebhookDelivery(authOf(req), req.params.delivery_id!)));
    })
    .get(`${one}/attempts`, async function listWebhookDeliveryAttempts(req, res) {
      const page = await svc.listWebhookDeliveryAttempts(authOf(req), req.params.delivery_id!, req.query as AttemptsQuery);
      res.json(listEnvelope(page.rows.map(presentWebhookDeliveryAttempt), page.hasMore, page.total));
    })
    .post(`${one}/retry`, async function retryWebhookDelivery(req, res) {
      res.status(202).json(presentWebhookDelivery(await svc.retryWebhookDelivery(authOf(req), req.params.delivery_id!)));
    });
}
