import type {
  AuthenticationInput,
  EndpointKind,
  CreateWebhookEndpointRequest,
  CreateWebhookListenerRequest,
  PayloadField,
  RecoverRequest,
  RotateSecretRequest,
  WebhookEndpointStatus,
  WebhookEndpointUpdate,
} from "@audit-review/api-types/internal";
import type { Prisma } from "../generated/prisma/client.js";
import type { AuthContext } from "../auth/context.js";
import { recovery } from "../domain/delivery/requeue.js";
import { AUDIT_ONLY_FIELDS, defaultEventTypes, subscriptionProblem } from "../domain/endpoint-kind.js";
import { ENDPOINT_KINDS, stored } from "../lib/stored-values.js";
import {
  DeliveryExpiringError,
  EndpointDisabledError,
  EndpointLimitReachedError,
  InvalidWebhookUrlError,
  ListenerLimitReachedError,
  NotFoundError,
  ValidationError,
} from "../lib/errors.js";
import { newId } from "../lib/ids.js";
import type { PageRequest } from "../lib/page.js";
import type { Retention } from "../domain/retention.js";
import { storedReceiverAuth, type StoredReceiverAuth } from "../lib/receiver-auth-config.js";
import { isReservedHeaderName } from "../lib/receiver-headers.js";
import type { SecretBox } from "../lib/secret-box.js";
import { listenerIdOf, listenerUrl } from "../lib/listener-url.js";
import { generateSigningSecret, listenerSigningSecret, secretHint } from "../lib/signing-secrets.js";
import { checkWebhookUrl, type WebhookUrlCheckOptions } from "../net/webhook-url.js";
import type { QuestionSetsRepo } from "../repos/question-sets.repo.js";
import type { NoticeMade } from "../repos/notification-sql.js";
import type { WebhookEndpointsRepo } from "../repos/webhook-endpoints.repo.js";
import type { WebhookListenersRepo } from "../repos/webhook-listeners.repo.js";

export const ENDPOINT_LIMIT = 20;
/** Live webhook listeners an org may have (they count toward ENDPOINT_LIMIT too). */
export const LISTENER_LIMIT = 5;
/** How far back a recovery may reach (docs/api-decisions.md#webhook-endpoints). */
export const RECOVERY_WINDOW_MS = 14 * 24 * 60 * 60 * 1000;
export const DEFAULT_PAYLOAD_FIELDS: PayloadField[] = [
  "data.documentId",
  "data.result",
  "responses",
  "responses.query",
  "responses.answer",
  "responses.context",
];

// an HTTP token (RFC 9110 §5.6.2) of at most 256 characters, as the contract documents
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Prisma's Bytes is a Uint8Array over a plain ArrayBuffer. */
const toBytes = (b: Buffer): Uint8Array<ArrayBuffer> => new Uint8Array(b);

export interface WebhookEndpointsDeps {
  endpoints: WebhookEndpointsRepo;
  listeners: WebhookListenersRepo;
  questionSets: QuestionSetsRepo;
  secretBox: SecretBox;
  urlCheck: WebhookUrlCheckOptions;
  rotationGraceMs: number;
  /** the one clock (clock/): stamps, listener holds and retention are judged on it */
  now: () => Date;
  /** wakes the dispatchers when deliveries were queued */
  onQueued: () => void;
  /** operational notifications were made (an endpoint disabled by hand): their log line and metric */
  onNotified: (notices: readonly NoticeMade[]) => void;
  /** an endpoint was updated, deleted or had its secret rotated: every process drops what it cached of it */
  onEndpointChanged: (endpointId: string) => void;
  /** what a recovery may still revive */
  retention: Retention;
}

/** Splits receiver authentication into what may be shown (stored) and what is sealed (secrets). */
async function receiverAuth(
  input: AuthenticationInput | undefined,
  urlCheck: WebhookUrlCheckOptions,
): Promise<{ stored: StoredReceiverAuth; secrets: Record<string, unknown> | null }> {
  const auth = input ?? { type: "none" as const };
  switch (auth.type) {
    case "none":
      return { stored: storedReceiverAuth({ type: auth.type }), secrets: null };
    case "headers": {
      const seen = new Set<string>();
      for (const [name, value] of Object.entries(auth.headers)) {
        if (!HEADER_NAME.test(name)) throw new ValidationError("body", "authentication.headers", `"${name.slice(0, 64)}${name.length > 64 ? "…" : ""}" is not a valid header name (an HTTP token of at most 256 characters)`);
        const lower = name.toLowerCase();
        // header names are case-insensitive: two spellings would send one header twice
        if (seen.has(lower)) throw new ValidationError("body", "authentication.headers", `"${name}" is given more than once`);
        seen.add(lower);
        if (isReservedHeaderName(name)) {
          throw new ValidationError("body", "authentication.headers", `"${name}" is reserved and cannot be set`);
        }
        if (!HEADER_VALUE.test(value)) throw new ValidationError("body", "authentication.headers", `the value of "${name}" has characters not allowed in a header`);
      }
      return { stored: storedReceiverAuth({ type: auth.type, header_names: Object.keys(auth.headers) }), secrets: { headers: auth.headers } };
    }
    case "basic":
      return { stored: storedReceiverAuth({ type: auth.type, username: auth.username }), secrets: { password: auth.password } };
    case "oauth2_client_credentials": {
      const check = await checkWebhookUrl(auth.token_url, urlCheck);
      if (!check.ok) throw new InvalidWebhookUrlError("authentication.token_url", check.reason);
      return {
        stored: storedReceiverAuth({
          type: auth.type,
          token_url: auth.token_url,
          client_id: auth.client_id,
          scope: auth.scope ?? null,
          audience: auth.audience ?? null,
        }),
        secrets: { client_secret: auth.client_secret },
      };
    }
  }
}

function payloadFields(fields: PayloadField[] | undefined): PayloadField[] {
  const chosen = fields ?? DEFAULT_PAYLOAD_FIELDS;
  if (!chosen.includes("responses") && chosen.some((f) => f.startsWith("responses."))) {
    throw new ValidationError("body", "payload.fields", "responses.query, responses.answer and responses.context need responses");
  }
  return chosen;
}

/** The stored payload columns of a `payload` object, its omitted fields at their defaults (create and a replacing update alike). */
function payloadColumns(payload: CreateWebhookEndpointRequest["payload"]) {
  return {
    payload_format: payload?.format ?? "standard_v1",
    payload_fields: payloadFields(payload?.fields),
    payload_result_format: payload?.result_format ?? "normalized",
    payload_responses_filter: payload?.responses_filter ?? "all",
    payload_include_informational: payload?.include_informational_questions ?? false,
  } satisfies Prisma.WebhookEndpointUpdateManyMutationInput;
}

/** Why a recovery's `since` is refused when it reaches further back than the window. */
const RECOVERY_TOO_OLD = `must be at most ${RECOVERY_WINDOW_MS / (24 * 3600_000)} days back`;

export function webhookEndpointsService(deps: WebhookEndpointsDeps) {
  const { endpoints, questionSets, secretBox, urlCheck, now, onEndpointChanged } = deps;
  const changed = <T>(endpointId: string, result: T): T => {
    onEndpointChanged(endpointId);
    return result;
  };

  const notFound = () => new NotFoundError("No webhook endpoint with this id exists in your org.");
  const found = <T>(row: T | null | undefined): T => {
    if (!row) throw notFound();
    return row;
  };
  const findOrThrow = async (auth: AuthContext, id: string) => found(await endpoints.findLive(auth.orgId, id));

  /** The URL safety rules of create, applied wherever a URL is set. */
  async function checkUrl(url: string): Promise<void> {
    const check = await checkWebhookUrl(url, urlCheck);
    if (!check.ok) throw new InvalidWebhookUrlError("url", check.reason);
  }

  async function checkQuestionSets(auth: AuthContext, setIds: string[]): Promise<string[]> {
    const known = await questionSets.existingIds(auth.orgId, setIds);
    const unknown = setIds.find((id) => !known.has(id));
    if (unknown) throw new ValidationError("body", "filters.question_set_ids", `${unknown} is not a question set of your org`);
    return setIds;
  }

  /** The create or update fields this kind of endpoint cannot have (domain/endpoint-kind.ts), every one named. */
  function checkKind(kind: EndpointKind, body: Pick<CreateWebhookEndpointRequest, "event_types" | "filters" | "payload">): void {
    const issues: { name: string; message: string }[] = [];
    const problem = body.event_types && subscriptionProblem(kind, body.event_types);
    if (problem) issues.push({ name: "event_types", message: problem });
    if (kind === "operational") {
      for (const field of AUDIT_ONLY_FIELDS) {
        if (body[field] !== undefined) issues.push({ name: field, message: "applies to audit endpoints only: an operational endpoint receives every notification it subscribes to, as documented" });
      }
    }
    if (issues.length) throw ValidationError.many("body", issues);
  }

  /** The row of a new endpoint: the create's fields with their defaults, validated. */
  async function newEndpoint(
    auth: AuthContext,
    id: string,
    url: string,
    body: Omit<CreateWebhookEndpointRequest, "url">,
    secret: string,
  ): Promise<Prisma.WebhookEndpointUncheckedCreateInput & { created_at: Date }> {
    const kind = body.kind ?? "audit";
    checkKind(kind, body);
    const payload = payloadColumns(body.payload);
    const setIds = await checkQuestionSets(auth, body.filters?.question_set_ids ?? []);
    const receiver = await receiverAuth(body.authentication, urlCheck);
    const at = now();
    return {
      id,
      org_id: auth.orgId,
      url,
      description: body.description ?? null,
      status: "enabled",
      kind,
      event_types: body.event_types ?? defaultEventTypes(kind),
      filter_question_set_ids: setIds,
      filter_audit_results: body.filters?.audit_results ?? "all",
      ...payload,
      ...receiver.stored,
      auth_secret_enc: receiver.secrets ? toBytes(secretBox.seal(JSON.stringify(receiver.secrets))) : null,
      secret_enc: toBytes(secretBox.seal(secret)),
      secret_hint: secretHint(secret),
      legacy_signature: body.signing?.legacy_signature ?? false,
      rate_limit: body.rate_limit ?? null,
      delivery_order: body.delivery_order ?? "unordered",
      created_at: at,
      updated_at: at,
    };
  }

  return {
    listWebhookEndpoints(auth: AuthContext, filters: { status?: WebhookEndpointStatus | undefined; kind?: EndpointKind | undefined }, page: PageRequest) {
      return endpoints.list(auth.orgId, filters, page);
    },

    async createWebhookEndpoint(auth: AuthContext, body: CreateWebhookEndpointRequest) {
      await checkUrl(body.url);
      const secret = generateSigningSecret();
      const data = await newEndpoint(auth, newId(), body.url, body, secret);
      const row = await endpoints.createWithinLimit(data, ENDPOINT_LIMIT);
      if (!row) throw new EndpointLimitReachedError(ENDPOINT_LIMIT);
      return { endpoint: row, secret };
    },

    /**
     * A webhook listener: an endpoint with the create's fields and defaults, no receiver
     * authentication, a `listener:` URL and its token's signing secret. Created disconnected; it
     * counts toward the endpoint limit from now on, and toward the listener limit.
     */
    async createWebhookListener(auth: AuthContext, body: CreateWebhookListenerRequest | undefined) {
      const id = newId();
      const secret = listenerSigningSecret(secretBox.derive, auth.orgId, auth.tokenId);
      const data = await newEndpoint(auth, id, listenerUrl(id), body ?? {}, secret);
      const created = await deps.listeners.create(data, now(), ENDPOINT_LIMIT, LISTENER_LIMIT);
      switch (created.kind) {
        case "endpoint_limit":
          throw new EndpointLimitReachedError(ENDPOINT_LIMIT);
        case "listener_limit":
          throw new ListenerLimitReachedError(LISTENER_LIMIT);
        case "created":
          return { endpoint: created.endpoint, secret };
      }
    },

    getWebhookEndpoint: findOrThrow,

    /**
     * Everything is validated before anything is written, and the write is one transaction, so a
     * rejected update leaves the endpoint as it was.
     */
    async updateWebhookEndpoint(auth: AuthContext, id: string, body: WebhookEndpointUpdate) {
      const current = await findOrThrow(auth, id);
      // a listener's deliveries go down its stream: it has no URL to move, and no receiver to authenticate to
      if (listenerIdOf(current.url) !== null && (body.url !== undefined || body.authentication !== undefined)) {
        const message = "cannot be set on a webhook listener";
        throw ValidationError.many("body", [
          ...(body.url !== undefined ? [{ name: "url", message }] : []),
          ...(body.authentication !== undefined ? [{ name: "authentication", message }] : []),
        ]);
      }
      checkKind(stored(ENDPOINT_KINDS, current.kind), body);
      const data: Prisma.WebhookEndpointUpdateManyMutationInput = {};
      if (body.url !== undefined) {
        await checkUrl(body.url);
        data.url = body.url;
      }
      if (body.description !== undefined) data.description = body.description;
      if (body.event_types !== undefined) data.event_types = body.event_types;
      if (body.filters !== undefined) {
        data.filter_question_set_ids = await checkQuestionSets(auth, body.filters.question_set_ids ?? []);
        data.filter_audit_results = body.filters.audit_results ?? "all";
      }
      if (body.payload !== undefined) Object.assign(data, payloadColumns(body.payload));
      if (body.authentication !== undefined) {
        const receiver = await receiverAuth(body.authentication, urlCheck);
        data.auth_type = receiver.stored.auth_type;
        data.auth_config = receiver.stored.auth_config;
        data.auth_secret_enc = receiver.secrets ? toBytes(secretBox.seal(JSON.stringify(receiver.secrets))) : null;
      }
      if (body.signing?.legacy_signature !== undefined) data.legacy_signature = body.signing.legacy_signature;
      // a new limit applies from the next claim; the throttle's state is the dispatchers' to keep
      if (body.rate_limit !== undefined) data.rate_limit = body.rate_limit;
      // applies from the next claim: the queue is then taken head first, in event order
      if (body.delivery_order !== undefined) data.delivery_order = body.delivery_order;
      const updated = found(await endpoints.update(auth.orgId, id, data, body.status, now()));
      if (updated.notices.length) {
        deps.onNotified(updated.notices);
        deps.onQueued();
      }
      return changed(id, updated.row);
    },

    async deleteWebhookEndpoint(auth: AuthContext, id: string) {
      if (!(await endpoints.softDelete(auth.orgId, id, now()))) throw notFound();
      onEndpointChanged(id);
    },

    async rotateWebhookEndpointSecret(auth: AuthContext, id: string, body: RotateSecretRequest | undefined) {
      const secret = generateSigningSecret();
      const graceMs = body?.expires_in !== undefined ? body.expires_in * 1000 : deps.rotationGraceMs;
      const row = await endpoints.rotateSecret(auth.orgId, id, { secret_enc: toBytes(secretBox.seal(secret)), secret_hint: secretHint(secret) }, graceMs, now());
      return changed(id, { endpoint: found(row), secret });
    },

    async recoverWebhookDeliveries(auth: AuthContext, id: string, body: RecoverRequest): Promise<number> {
      const nowMs = now().getTime();
      const since = new Date(body.since);
      const until = body.until !== undefined ? new Date(body.until) : new Date(nowMs);
      const issues = [];
      if (since.getTime() < nowMs - RECOVERY_WINDOW_MS) issues.push({ name: "since", message: RECOVERY_TOO_OLD });
      if (until.getTime() <= since.getTime()) issues.push({ name: "until", message: "must be after since" });
      if (issues.length) throw ValidationError.many("body", issues);
      const endpoint = await findOrThrow(auth, id);
      if (endpoint.status !== "enabled") throw new EndpointDisabledError();
      const revivableFrom = deps.retention.earliestRevivable(new Date(nowMs));
      if (since < revivableFrom) {
        throw new DeliveryExpiringError(
          `since reaches deliveries that retention (${deps.retention.days} days) removes within 24 hours; the earliest since accepted now is ${revivableFrom.toISOString()}.`,
        );
      }
      const queued = await endpoints.requeueFailed(auth.orgId, id, since, until, recovery(new Date(nowMs)));
      if (queued) deps.onQueued();
      return queued;
    },

    findOrThrow,
  };
}

export type WebhookEndpointsService = ReturnType<typeof webhookEndpointsService>;
