import type { Database, SqlExecutor } from "../db/client.js";
import type { Retention } from "../domain/retention.js";
import type { SecretBox } from "../lib/secret-box.js";
import type { WebhookUrlCheckOptions } from "../net/webhook-url.js";
import { createCountCache } from "../repos/count-cache.js";
import { codingEvaluationsRepo } from "../repos/coding-evaluations.repo.js";
import { eventsRepo } from "../repos/events.repo.js";
import type { NoticeMade } from "../repos/notification-sql.js";
import { idempotencyKeysRepo } from "../repos/idempotency-keys.repo.js";
import { portalSessionsRepo } from "../repos/portal-sessions.repo.js";
import { questionSetsRepo } from "../repos/question-sets.repo.js";
import { rateLimitsRepo } from "../repos/rate-limits.repo.js";
import { tokensRepo } from "../repos/tokens.repo.js";
import { webhookDeliveriesRepo } from "../repos/webhook-deliveries.repo.js";
import { webhookDeliveryAttemptsRepo } from "../repos/webhook-delivery-attempts.repo.js";
import { webhookEndpointsRepo } from "../repos/webhook-endpoints.repo.js";
import { webhookListenersRepo } from "../repos/webhook-listeners.repo.js";
import { codingEvaluationsService } from "./coding-evaluations.service.js";
import { eventsService } from "./events.service.js";
import { idempotencyService } from "./idempotency.service.js";
import { portalSessionsService } from "./portal-sessions.service.js";
import { questionSetsService } from "./question-sets.service.js";
import { tokensService } from "./tokens.service.js";
import { webhookDeliveriesService } from "./webhook-deliveries.service.js";
import { webhookEndpointsService } from "./webhook-endpoints.service.js";
import { webhookListenersService, type ListenerStreams } from "./webhook-listeners.service.js";

export interface ServicesDeps {
  db: Database;
  /** A read replica for the eventually consistent lists (question sets, coding evaluations). */
  replica?: SqlExecutor | undefined;
  secretBox: SecretBox;
  urlCheck: WebhookUrlCheckOptions;
  rotationGraceMs: number;
  onQueued: () => void;
  /** operational notifications were made by a request (an endpoint disabled by hand) */
  onNotified: (notices: readonly NoticeMade[]) => void;
  /** an endpoint was updated, deleted or had its secret rotated: every process drops what it cached of it */
  onEndpointChanged: (endpointId: string) => void;
  /** the webhook listener streams this process holds (the delivery engine's listener transport) */
  listenerStreams: ListenerStreams;
  /** what a retry or recovery may still revive */
  retention: Retention;
  /** the one clock (clock/): listener leases, stamps and retention are judged on it */
  now: () => Date;
  /** where the deliveries' and events' list pages are read, when not on `db` (db/postgres.ts openGenericReads) */
  partitionedReads?: SqlExecutor | undefined;
}

/** Wires every use case to its repositories; nothing here touches HTTP. */
export function createServices({ db, replica, secretBox, urlCheck, rotationGraceMs, onQueued, onNotified, onEndpointChanged, listenerStreams, retention, now, partitionedReads }: ServicesDeps) {
  // one count cache per process: include_total on a large org is counted once per few seconds
  const counts = createCountCache();
  const questionSets = questionSetsRepo(db, counts, replica);
  const listeners = webhookListenersRepo(db);
  const webhookEndpoints = webhookEndpointsService({
    endpoints: webhookEndpointsRepo(db.prisma),
    listeners,
    questionSets,
    secretBox,
    urlCheck,
    rotationGraceMs,
    onQueued,
    onNotified,
    onEndpointChanged,
    retention,
    now,
  });
  return {
    tokens: tokensService(tokensRepo(db)),
    questionSets: questionSetsService(questionSets, now),
    codingEvaluations: codingEvaluationsService(codingEvaluationsRepo(db, counts, replica), now),
    webhookEndpoints,
    webhookListeners: webhookListenersService({ listeners, streams: listenerStreams }),
    webhookDeliveries: webhookDeliveriesService({
      deliveries: webhookDeliveriesRepo(db, counts, now, partitionedReads),
      attempts: webhookDeliveryAttemptsRepo(db.prisma),
      onQueued,
      retention,
      now,
    }),
    idempotency: idempotencyService(idempotencyKeysRepo(db), secretBox),
    events: eventsService({ events: eventsRepo(db, counts, now, partitionedReads), endpoints: webhookEndpoints, onQueued, now }),
    /** The webhook portal's single-use links and cookie sessions. */
    portalSessions: portalSessionsService(portalSessionsRepo(db)),
    /** Request counts per token, shared through the database by every API process. */
    rateLimits: rateLimitsRepo(db),
  };
}

export type Services = ReturnType<typeof createServices>;
