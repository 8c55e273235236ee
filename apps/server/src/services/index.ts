import type { Database } from "../db/client.js";
import type { SecretBox } from "../lib/secret-box.js";
import type { WebhookUrlCheckOptions } from "../net/webhook-url.js";
import { codingEvaluationsRepo } from "../repos/coding-evaluations.repo.js";
import { eventsRepo } from "../repos/events.repo.js";
import { idempotencyKeysRepo } from "../repos/idempotency-keys.repo.js";
import { questionSetsRepo } from "../repos/question-sets.repo.js";
import { tokensRepo } from "../repos/tokens.repo.js";
import { webhookDeliveriesRepo } from "../repos/webhook-deliveries.repo.js";
import { webhookDeliveryAttemptsRepo } from "../repos/webhook-delivery-attempts.repo.js";
import { webhookEndpointsRepo } from "../repos/webhook-endpoints.repo.js";
import { codingEvaluationsService } from "./coding-evaluations.service.js";
import { eventsService } from "./events.service.js";
import { questionSetsService } from "./question-sets.service.js";
import { tokensService } from "./tokens.service.js";
import { webhookDeliveriesService } from "./webhook-deliveries.service.js";
import { webhookEndpointsService } from "./webhook-endpoints.service.js";

export interface ServicesDeps {
  db: Database;
  secretBox: SecretBox;
  urlCheck: WebhookUrlCheckOptions;
  rotationGraceMs: number;
  onQueued: () => void;
}

/** Wires every use case to its repositories; nothing here touches HTTP. */
export function createServices({ db, secretBox, urlCheck, rotationGraceMs, onQueued }: ServicesDeps) {
  const questionSets = questionSetsRepo(db.prisma);
  const webhookEndpoints = webhookEndpointsService({
    endpoints: webhookEndpointsRepo(db.prisma),
    questionSets,
    secretBox,
    urlCheck,
    rotationGraceMs,
    onQueued,
  });
  return {
    tokens: tokensService(tokensRepo(db.prisma)),
    questionSets: questionSetsService(questionSets),
    codingEvaluations: codingEvaluationsService(codingEvaluationsRepo(db.prisma)),
    webhookEndpoints,
    webhookDeliveries: webhookDeliveriesService({
      deliveries: webhookDeliveriesRepo(db.prisma),
      attempts: webhookDeliveryAttemptsRepo(db.prisma),
      onQueued,
    }),
    idempotencyKeys: idempotencyKeysRepo(db),
    events: eventsService({ events: eventsRepo(db), questionSets, endpoints: webhookEndpoints, onQueued }),
  };
}

export type Services = ReturnType<typeof createServices>;
