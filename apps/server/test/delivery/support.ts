// Shared set-up of the delivery tests: the real server with its dispatcher, real HTTPS receivers
// on loopback reached through an injected resolver, the test CA trusted as an extra CA, and
// 127.0.0.1/32 allowed explicitly — the same configuration a developer uses locally
// (ARS_STATIC_HOSTS, ARS_EXTRA_CA_FILE, ARS_ALLOW_PRIVATE_CIDRS); production enables none of it.
import type {
  CreatedWebhookEndpoint,
  CreateWebhookEndpointRequest,
  QuestionSet,
  WebhookDelivery,
  WebhookEndpoint,
} from "@audit-review/api-types/internal";
import { verifyWebhook } from "@audit-review/client/webhooks";
import { createTestCa, type TestCa } from "@audit-review/test-kit/ca";
import { startReceiver, type Receiver, type ReceiverOptions } from "@audit-review/test-kit/receiver";
import { afterAll, afterEach, expect } from "vitest";
import type { DeliveryConfig } from "../../src/config.js";
import { adjustableClock, type AdjustableClock } from "../harness/clock.js";
import { staticResolver, type Resolver } from "../../src/net/resolver.js";
import type { StartServerOptions } from "../../src/server.js";
import { Writable } from "node:stream";
import { createLogger } from "../../src/lib/logger.js";
import type { StartWorkerOptions } from "../../src/worker.js";
import { createEndpoint, credentials, ingestQuestionSet, publishEvent, useApiServer, type EventOverrides } from "../harness/factories.js";
import type { Api, TestServer } from "../harness/server.js";

export { verifyWebhook };
export { verifyLegacySignature } from "@audit-review/client/webhooks";

export const RECEIVER_HOST = "receiver.test-hooks.dev";
export const AUTH_HOST = "auth.test-hooks.dev";
/** A public address: what a name resolves to at creation in the DNS-rebinding test. */
export const PUBLIC_ADDRESS = "93.184.216.34";

export interface DeliveryHarness {
  server: TestServer;
  ca: TestCa;
  /** name → addresses, read at every lookup: tests change it to move a name */
  hosts: Map<string, string[]>;
  /** The engine's clock: `advance` it instead of sleeping through token lifetimes, grace periods and retry delays. */
  clock: AdjustableClock;
  receiver(opts?: Partial<ReceiverOptions>): Promise<Receiver>;
}

/**
 * One server per test file, fresh database (PGlite, or PostgreSQL with TEST_DATABASE_URL), its
 * dispatcher on, the delivery schedule and limits shrunk to milliseconds by `delivery`.
 */
export async function useDeliveryServer(delivery: Partial<DeliveryConfig>, opts: StartServerOptions = {}): Promise<DeliveryHarness> {
  const ca = createTestCa();
  const hosts = new Map<string, string[]>([
    [RECEIVER_HOST, ["127.0.0.1"]],
    [AUTH_HOST, ["127.0.0.1"]],
  ]);
  const resolver: Resolver = (name) => staticResolver(Object.fromEntries(hosts))(name);
  const clock = adjustableClock();
  const server = await useApiServer({
    clock: () => clock,
    dispatcher: true,
    resolver,
    allowCidrs: ["127.0.0.1/32"],
    extraCa: ca.cert,
    delivery: { jitter: 0, pollIntervalMs: 50, ...delivery },
    ...opts,
  });
  const receivers: Receiver[] = [];
  afterEach(async () => {
    // Unanswered requests would keep attempts in flight into the next test.
    for (const r of receivers.splice(0)) await r.close();
  });
  afterAll(async () => {
    for (const r of receivers.splice(0)) await r.close();
  });
  return {
    server,
    ca,
    hosts,
    clock,
    async receiver(o = {}) {
      const r = await startReceiver({ ca, hostname: RECEIVER_HOST, ...o });
      receivers.push(r);
      return r;
    },
  };
}

/** Options of a worker in this process sharing the harness server's PostgreSQL, its receivers' CA and names. */
export function workerOptions(h: DeliveryHarness, delivery: Partial<DeliveryConfig>): StartWorkerOptions {
  const config = h.server.server.deps.config;
  return {
    databaseUrl: config.databaseUrl,
    encryptionKey: config.encryptionKey,
    // the names the server resolves, as they are when a lookup happens
    resolver: (name) => staticResolver(Object.fromEntries(h.hosts))(name),
    allowCidrs: ["127.0.0.1/32"],
    extraCa: h.ca.cert,
    delivery: { jitter: 0, pollIntervalMs: 50, ...delivery },
    logger: createLogger({ level: "warn", destination: new Writable({ write: (_c, _e, cb) => cb() }) }),
  };
}

/** Remembers a value that must never appear in a log line (checked after the file). */
export const rememberCredential = (value: string) => credentials.add(value);

export async function endpointFor(api: Api, url: string, body: Partial<CreateWebhookEndpointRequest> = {}): Promise<CreatedWebhookEndpoint> {
  return createEndpoint(api, { url, ...body });
}

export async function deliveriesOf(api: Api, endpointId: string): Promise<WebhookDelivery[]> {
  const { data, error } = await api.GET("/v2/webhook_deliveries", { params: { query: { endpoint_id: endpointId, limit: 100 } } });
  if (!data) throw new Error(`listWebhookDeliveries failed: ${JSON.stringify(error)}`);
  return data.data;
}

/** The only delivery of an endpoint, read through the API. */
export async function onlyDelivery(api: Api, endpointId: string): Promise<WebhookDelivery> {
  const list = await deliveriesOf(api, endpointId);
  expect(list, "exactly one delivery").toHaveLength(1);
  return list[0]!;
}

export async function readEndpoint(api: Api, endpointId: string): Promise<WebhookEndpoint> {
  const { data, error } = await api.GET("/v2/webhook_endpoints", { params: { query: { limit: 100 } } });
  if (!data) throw new Error(`listWebhookEndpoints failed: ${JSON.stringify(error)}`);
  const found = data.data.find((e) => e.id === endpointId);
  if (!found) throw new Error(`endpoint ${endpointId} is not listed`);
  return found;
}

export async function publish(api: Api, overrides: EventOverrides = {}) {
  const { request, event } = await publishEvent(api, overrides);
  return { ...request, deliveriesCreated: event.deliveries_created, created: event.created };
}

/** A question set of the org (its default questions). */
export const ingestQuestionSetFor = (api: Api) => ingestQuestionSet(api);

/** A question set with a scored question that fails, one that passes and an informational one. */
export async function rubric(api: Api): Promise<QuestionSet> {
  return ingestQuestionSet(api, {
    questions: [
      { query: "Is the chief complaint documented?", question_type: "yes_no", severity: "high" },
      { query: "Are vitals recorded?", question_type: "yes_no", severity: "medium" },
      { query: "Which clinic saw the patient?", question_type: "informational" },
    ],
  });
}

/** Millisecond distance between two API timestamps. */
export const msBetween = (from: string, to: string) => Date.parse(to) - Date.parse(from);

/** A promise with its resolve function, for handlers that hold a request until the test lets go. */
export function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** The delivery row after one failed attempt with attempts left to go. */
export function retryingAfterOne(status: number | null, error?: { code: string; message: string }) {
  return { status: "retrying", attempt_count: 1, last_response_status: status, delivered_at: null, ...(error ? { last_error: error } : {}) };
}
