import { Router } from "express";
import type { CreateWebhookListenerRequest, WebhookListenerAnswer } from "@audit-review/api-types/internal";
import { authOf, type Validated } from "../http/context.js";
import { eventStream } from "../http/event-stream.js";
import { presentCreatedWebhookEndpoint } from "../presenters/webhook-endpoint.presenter.js";
import type { WebhookEndpointsService } from "../services/webhook-endpoints.service.js";
import type { WebhookListenersService } from "../services/webhook-listeners.service.js";

export interface WebhookListenersRouteDeps {
  webhookEndpoints: WebhookEndpointsService;
  webhookListeners: WebhookListenersService;
}

export function webhookListenersRoutes({ webhookEndpoints, webhookListeners: svc }: WebhookListenersRouteDeps): Router {
  const one = "/v2/webhook_listeners/:listener_id";
  return Router({ caseSensitive: true })
    .post("/v2/webhook_listeners", async function createWebhookListener(req: Validated<CreateWebhookListenerRequest | undefined>, res) {
      const { endpoint, secret } = await webhookEndpoints.createWebhookListener(authOf(req), req.body);
      res.status(201).location(`/v2/webhook_endpoints/${endpoint.id}`).json(presentCreatedWebhookEndpoint(endpoint, secret));
    })
    .get(`${one}/stream`, async function streamWebhookListener(req, res) {
      // the stream can overflow only once connected, when `end` is known
      const connected: { end?: (why: "client" | "slow_client") => void } = {};
      const sink = eventStream(res, { onOverflow: () => connected.end?.("slow_client") });
      const end = await svc.streamWebhookListener(authOf(req), req.params.listener_id!, sink);
      connected.end = end;
      if (res.closed) end("client");
      else res.on("close", () => end("client"));
    })
    .post(`${one}/answers`, async function answerWebhookListenerRequest(req: Validated<WebhookListenerAnswer, unknown, { listener_id: string }>, res) {
      await svc.answerWebhookListenerRequest(authOf(req), req.params.listener_id, req.body);
      res.status(204).end();
    });
}
