import createFetchClient, { type Client, type FetchResponse } from "openapi-fetch";
import type {
  CodingEvaluationList,
  CreatedWebhookEndpoint,
  CreateWebhookEndpointRequest,
  Event,
  EventList,
  operations,
  paths,
  PortalSession,
  QuestionSetList,
  Recovery,
  WebhookDelivery,
  WebhookDeliveryAttempt,
  WebhookDeliveryAttemptList,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookEndpointList,
} from "@audit-review/api-types";
import { ApiError } from "./errors.js";
import { bearerAuth, type TokenSource } from "./middleware/auth.js";
import { paginateBackward, paginateForward, withCursor, type Cursor, type Page, type PageFetcher } from "./pagination.js";

interface BaseClientOptions {
  /** The API's origin, e.g. `https://api.audit-review.dev` (paths already start with `/v2`). */
  baseUrl: string;
  /** A fetch implementation (defaults to `globalThis.fetch`), e.g. for proxies, retries or tests. */
  fetch?: (input: Request) => Promise<Response>;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
}

/**
 * Options of {@link createClient}: a fixed `token`, or `getToken` called before every request, or
 * `sessionCookie: true` in a page of the webhook portal, whose session cookie authenticates
 * instead (then `baseUrl` is the portal's API base, `/portal/{org_id}/api`, and no token is ever
 * held by the page).
 */
export type ClientOptions = BaseClientOptions &
  (
    | { token: string; getToken?: never; sessionCookie?: never }
    | { getToken: TokenSource; token?: never; sessionCookie?: never }
    | { sessionCookie: true; token?: never; getToken?: never }
  );

/** Per-call options. */
export interface CallOptions {
  signal?: AbortSignal;
  /** Extra headers for this call, e.g. your own `X-Request-Id`. */
  headers?: Record<string, string>;
}

/** Per-call options of a POST: an `Idempotency-Key` makes it safe to repeat. */
export interface PostOptions extends CallOptions {
  /** 1–255 printable characters; a repeat with the same key and body replays the first answer. */
  idempotencyKey?: string;
}

type QueryOf<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;
export type CreatePortalSessionBody = NonNullable<operations["createPortalSession"]["requestBody"]>["content"]["application/json"];
type BodyOf<Op extends keyof operations> = NonNullable<operations[Op]["requestBody"]>["content"]["application/json"];

export type ListQuestionSetsQuery = QueryOf<"listQuestionSets">;
export type ListCodingEvaluationsQuery = QueryOf<"listCodingEvaluations">;
export type ListWebhookEndpointsQuery = QueryOf<"listWebhookEndpoints">;
export type ListWebhookDeliveriesQuery = QueryOf<"listWebhookDeliveries">;
export type ListWebhookDeliveryAttemptsQuery = QueryOf<"listWebhookDeliveryAttempts">;
export type ListEventsQuery = QueryOf<"listEvents">;
export type WebhookEndpointUpdateBody = BodyOf<"updateWebhookEndpoint">;
export type RotateSecretBody = BodyOf<"rotateWebhookEndpointSecret">;
export type RecoverBody = BodyOf<"recoverWebhookDeliveries">;

/** The paths of the lists that share the cursor pagination. */
export type ListPath = "/v2/question_sets" | "/v2/coding_evaluations" | "/v2/webhook_endpoints" | "/v2/webhook_deliveries" | "/v2/events";
/** The query parameters of a list, as generated from the contract. */
export type ListQuery<P extends ListPath> = NonNullable<paths[P]["get"]["parameters"]["query"]>;
/** One page of a list: `{ object: "list", data, has_more, total_count? }`. */
export type ListPage<P extends ListPath> = paths[P]["get"]["responses"][200]["content"]["application/json"];
/** An item of a list. */
export type ListItem<P extends ListPath> = ListPage<P>["data"][number];

/**
 * Filters and page size for walking a list forward (towards older items). An optional
 * `starting_after` starts after that item; `include_total` is left out because an iterator
 * has no use for it.
 */
export type ForwardQuery<P extends ListPath> = Omit<ListQuery<P>, "ending_before" | "include_total">;
/** Filters and page size for walking a list backward (towards newer items) from `ending_before`. */
export type BackwardQuery<P extends ListPath> = Omit<ListQuery<P>, "starting_after" | "ending_before" | "include_total"> & {
  ending_before: string;
};

/** Fetches one page of each list: the caller's query (forward or backward) at `cursor`. */
type ListFetchers = {
  [P in ListPath]: (query: ForwardQuery<P> | BackwardQuery<P> | undefined, cursor: Cursor, signal?: AbortSignal) => Promise<Page<ListItem<P>>>;
};

export interface AuditReviewClient {
  /** `GET /v2/question_sets` (scope `question_sets:read`): one page. */
  listQuestionSets(query?: ListQuestionSetsQuery, options?: CallOptions): Promise<QuestionSetList>;
  /** `GET /v2/coding_evaluations` (scope `coding_evaluations:read`): one page. */
  listCodingEvaluations(query?: ListCodingEvaluationsQuery, options?: CallOptions): Promise<CodingEvaluationList>;
  /** `GET /v2/webhook_endpoints` (scope `webhooks:read`): one page. */
  listWebhookEndpoints(query?: ListWebhookEndpointsQuery, options?: CallOptions): Promise<WebhookEndpointList>;
  /** `POST /v2/webhook_endpoints` (scope `webhooks:write`): the endpoint plus its `secret`, shown only here. */
  createWebhookEndpoint(body: CreateWebhookEndpointRequest, options?: PostOptions): Promise<CreatedWebhookEndpoint>;
  /** `GET /v2/webhook_endpoints/{endpoint_id}` (scope `webhooks:read`). */
  getWebhookEndpoint(endpointId: string, options?: CallOptions): Promise<WebhookEndpoint>;
  /** `PATCH /v2/webhook_endpoints/{endpoint_id}` (scope `webhooks:write`): only the given fields change. */
  updateWebhookEndpoint(endpointId: string, body: WebhookEndpointUpdateBody, options?: CallOptions): Promise<WebhookEndpoint>;
  /** `DELETE /v2/webhook_endpoints/{endpoint_id}` (scope `webhooks:write`). */
  deleteWebhookEndpoint(endpointId: string, options?: CallOptions): Promise<void>;
  /** `POST …/rotate_secret` (scope `webhooks:write`): the endpoint plus its new `secret`, shown only here. */
  rotateWebhookEndpointSecret(endpointId: string, body?: RotateSecretBody, options?: PostOptions): Promise<CreatedWebhookEndpoint>;
  /** `POST …/test` (scope `webhooks:write`): queues an `is_test` delivery. */
  sendTestWebhookEvent(endpointId: string, options?: PostOptions): Promise<WebhookDelivery>;
  /** `POST …/recover` (scope `webhooks:write`): queues the endpoint's failed deliveries in a window again. */
  recoverWebhookDeliveries(endpointId: string, body: RecoverBody, options?: PostOptions): Promise<Recovery>;
  /** `GET /v2/webhook_deliveries/{delivery_id}` (scope `webhooks:read`). */
  getWebhookDelivery(deliveryId: string, options?: CallOptions): Promise<WebhookDelivery>;
  /** `GET /v2/webhook_deliveries/{delivery_id}/attempts` (scope `webhooks:read`): one page, newest first. */
  listWebhookDeliveryAttempts(deliveryId: string, query?: ListWebhookDeliveryAttemptsQuery, options?: CallOptions): Promise<WebhookDeliveryAttemptList>;
  /** Every attempt of a delivery, newest first, page after page (`query.limit` is the page size). */
  paginateWebhookDeliveryAttempts(
    deliveryId: string,
    options?: { query?: Omit<ListWebhookDeliveryAttemptsQuery, "ending_before" | "include_total">; signal?: AbortSignal },
  ): AsyncIterableIterator<WebhookDeliveryAttempt>;
  /** `POST /v2/webhook_deliveries/{delivery_id}/retry` (scope `webhooks:write`): one manual attempt now. */
  retryWebhookDelivery(deliveryId: string, options?: PostOptions): Promise<WebhookDelivery>;
  /** `POST /v2/portal_sessions` (scope `webhooks:write`): a single-use link to the webhook portal. */
  createPortalSession(body?: CreatePortalSessionBody, options?: PostOptions): Promise<PortalSession>;
  /** `GET /v2/webhook_deliveries` (scope `webhooks:read`): one page. */
  listWebhookDeliveries(query?: ListWebhookDeliveriesQuery, options?: CallOptions): Promise<WebhookDeliveryList>;
  /** `GET /v2/events` (scope `events:read`): one page of the events published to your org, newest first. */
  listEvents(query?: ListEventsQuery, options?: CallOptions): Promise<EventList>;
  /** `GET /v2/events/{event_id}` (scope `events:read`): one event, as it was published. */
  getEvent(eventId: string, options?: CallOptions): Promise<Event>;
  /**
   * Every event from the newest (or after `query.starting_after`), page after page, with the
   * filters of `query` (`type`, `audit_id`, `created_after`, `created_before`): what a receiver
   * reconciles against after downtime. `query.limit` is the page size.
   */
  paginateEvents(options?: { query?: ForwardQuery<"/v2/events">; signal?: AbortSignal }): AsyncIterableIterator<Event>;

  /**
   * Every item of a list from the start (or after `query.starting_after`), newest first,
   * fetching page after page with `starting_after` as the loop goes. `query.limit` is the page size.
   */
  paginate<P extends ListPath>(
    path: P,
    options?: { query?: ForwardQuery<P>; signal?: AbortSignal },
  ): AsyncIterableIterator<ListItem<P>>;
  /**
   * Every item newer than `query.ending_before`, walking away from it: the item right before the
   * cursor first, the newest item last (so the order is the reverse of the list order).
   */
  paginateBackward<P extends ListPath>(
    path: P,
    options: { query: BackwardQuery<P>; signal?: AbortSignal },
  ): AsyncIterableIterator<ListItem<P>>;

  /**
   * The underlying openapi-fetch client (bearer header included). It does not throw on error
   * statuses: it answers `{ data, error, response }` as openapi-fetch does.
   */
  readonly raw: Client<paths>;
}

/**
 * The data of a 2xx answer, else ApiError. The return type is left to inference: it is the
 * success member of openapi-fetch's `FetchResponse`, whose `error` discriminates it.
 */
function unwrap<Op extends Record<string | number, unknown>, Init, Media extends `${string}/${string}`>(
  result: FetchResponse<Op, Init, Media>,
  method: string,
  path: string,
) {
  const { response } = result;
  // openapi-fetch sets `error` exactly when the status is not 2xx (to undefined for an empty body).
  if (!response.ok || "error" in result) {
    throw ApiError.fromResponse(response, result.error, { method, url: response.url || path });
  }
  return result.data;
}

/**
 * RFC 3986 percent-encoding of a query name or value. `encodeURIComponent` leaves `!'()*` as
 * they are, and the server refuses unencoded reserved characters (they are sub-delimiters), so
 * those are encoded too.
 */
export function encodeQueryComponent(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** `?a=1&id=x&id=y`: arrays repeat their name (style form, explode), absent values are left out. */
export function serializeQuery(query: Record<string, unknown>): string {
  const pairs: string[] = [];
  for (const [name, value] of Object.entries(query ?? {})) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item === undefined || item === null) continue;
      pairs.push(`${encodeQueryComponent(name)}=${encodeQueryComponent(String(item))}`);
    }
  }
  return pairs.join("&");
}

/** Creates a typed client of the Audit Review Service API. */
export function createClient(options: ClientOptions): AuditReviewClient {
  if (typeof options?.baseUrl !== "string" || options.baseUrl.length === 0) {
    throw new TypeError("@audit-review/client: baseUrl is required, e.g. https://api.audit-review.dev");
  }
  const getToken = options.sessionCookie === true ? null : resolveTokenSource(options);
  const raw = createFetchClient<paths>({
    baseUrl: options.baseUrl,
    querySerializer: serializeQuery,
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.headers ? { headers: options.headers } : {}),
  });
  // With a session cookie the browser authenticates each same-origin request itself.
  if (getToken) raw.use(bearerAuth(getToken));

  const signalOf = (signal: AbortSignal | undefined) => (signal ? { signal } : {});
  // One typed call per list: openapi-fetch resolves its per-path types only for a literal path,
  // and the mapped type lets `lists[path]` keep the item type of a generic `P`.
  const lists: ListFetchers = {
    "/v2/question_sets": async (query, cursor, signal) => {
      const path = "/v2/question_sets";
      return unwrap(await raw.GET(path, { params: { query: withCursor(query, cursor) }, ...signalOf(signal) }), "GET", path);
    },
    "/v2/coding_evaluations": async (query, cursor, signal) => {
      const path = "/v2/coding_evaluations";
      return unwrap(await raw.GET(path, { params: { query: withCursor(query, cursor) }, ...signalOf(signal) }), "GET", path);
    },
    "/v2/webhook_endpoints": async (query, cursor, signal) => {
      const path = "/v2/webhook_endpoints";
      return unwrap(await raw.GET(path, { params: { query: withCursor(query, cursor) }, ...signalOf(signal) }), "GET", path);
    },
    "/v2/webhook_deliveries": async (query, cursor, signal) => {
      const path = "/v2/webhook_deliveries";
      return unwrap(await raw.GET(path, { params: { query: withCursor(query, cursor) }, ...signalOf(signal) }), "GET", path);
    },
    "/v2/events": async (query, cursor, signal) => {
      const path = "/v2/events";
      return unwrap(await raw.GET(path, { params: { query: withCursor(query, cursor) }, ...signalOf(signal) }), "GET", path);
    },
  };

  return {
    raw,
    async listQuestionSets(query, call) {
      return unwrap(await raw.GET("/v2/question_sets", { params: { query }, ...call }), "GET", "/v2/question_sets");
    },
    async listCodingEvaluations(query, call) {
      return unwrap(
        await raw.GET("/v2/coding_evaluations", { params: { query }, ...call }),
        "GET",
        "/v2/coding_evaluations",
      );
    },
    async listWebhookEndpoints(query, call) {
      return unwrap(
        await raw.GET("/v2/webhook_endpoints", { params: { query }, ...call }),
        "GET",
        "/v2/webhook_endpoints",
      );
    },
    async createWebhookEndpoint(body, call) {
      const { header, ...rest } = post(call);
      return unwrap(await raw.POST("/v2/webhook_endpoints", { params: { header }, body, ...rest }), "POST", "/v2/webhook_endpoints");
    },
    async getWebhookEndpoint(endpointId, call) {
      const path = "/v2/webhook_endpoints/{endpoint_id}";
      return unwrap(await raw.GET(path, { params: { path: { endpoint_id: endpointId } }, ...call }), "GET", path);
    },
    async updateWebhookEndpoint(endpointId, body, call) {
      const path = "/v2/webhook_endpoints/{endpoint_id}";
      return unwrap(await raw.PATCH(path, { params: { path: { endpoint_id: endpointId } }, body, ...call }), "PATCH", path);
    },
    async deleteWebhookEndpoint(endpointId, call) {
      const path = "/v2/webhook_endpoints/{endpoint_id}";
      unwrap(await raw.DELETE(path, { params: { path: { endpoint_id: endpointId } }, ...call }), "DELETE", path);
    },
    async rotateWebhookEndpointSecret(endpointId, body, call) {
      const path = "/v2/webhook_endpoints/{endpoint_id}/rotate_secret";
      const { header, ...rest } = post(call);
      return unwrap(await raw.POST(path, { params: { path: { endpoint_id: endpointId }, header }, body: body ?? {}, ...rest }), "POST", path);
    },
    async sendTestWebhookEvent(endpointId, call) {
      const path = "/v2/webhook_endpoints/{endpoint_id}/test";
      const { header, ...rest } = post(call);
      return unwrap(await raw.POST(path, { params: { path: { endpoint_id: endpointId }, header }, ...rest }), "POST", path);
    },
    async recoverWebhookDeliveries(endpointId, body, call) {
      const path = "/v2/webhook_endpoints/{endpoint_id}/recover";
      const { header, ...rest } = post(call);
      return unwrap(await raw.POST(path, { params: { path: { endpoint_id: endpointId }, header }, body, ...rest }), "POST", path);
    },
    async getWebhookDelivery(deliveryId, call) {
      const path = "/v2/webhook_deliveries/{delivery_id}";
      return unwrap(await raw.GET(path, { params: { path: { delivery_id: deliveryId } }, ...call }), "GET", path);
    },
    async listWebhookDeliveryAttempts(deliveryId, query, call) {
      const path = "/v2/webhook_deliveries/{delivery_id}/attempts";
      return unwrap(await raw.GET(path, { params: { path: { delivery_id: deliveryId }, query }, ...call }), "GET", path);
    },
    paginateWebhookDeliveryAttempts(deliveryId, opts) {
      // the list's own path with the id in it, as errors name the URL
      const url = `/v2/webhook_deliveries/${encodeURIComponent(deliveryId)}/attempts`;
      const fetchPage: PageFetcher<WebhookDeliveryAttempt> = async (cursor) => {
        const result = await raw.GET("/v2/webhook_deliveries/{delivery_id}/attempts", {
          params: { path: { delivery_id: deliveryId }, query: withCursor(opts?.query, cursor) },
          ...signalOf(opts?.signal),
        });
        return unwrap(result, "GET", url);
      };
      return paginateForward(fetchPage, opts?.query?.starting_after);
    },
    async retryWebhookDelivery(deliveryId, call) {
      const path = "/v2/webhook_deliveries/{delivery_id}/retry";
      const { header, ...rest } = post(call);
      return unwrap(await raw.POST(path, { params: { path: { delivery_id: deliveryId }, header }, ...rest }), "POST", path);
    },
    async createPortalSession(body, call) {
      const { header, ...rest } = post(call);
      return unwrap(await raw.POST("/v2/portal_sessions", { params: { header }, body: body ?? {}, ...rest }), "POST", "/v2/portal_sessions");
    },
    async listWebhookDeliveries(query, call) {
      return unwrap(
        await raw.GET("/v2/webhook_deliveries", { params: { query }, ...call }),
        "GET",
        "/v2/webhook_deliveries",
      );
    },
    async listEvents(query, call) {
      return unwrap(await raw.GET("/v2/events", { params: { query }, ...call }), "GET", "/v2/events");
    },
    async getEvent(eventId, call) {
      const path = "/v2/events/{event_id}";
      return unwrap(await raw.GET(path, { params: { path: { event_id: eventId } }, ...call }), "GET", path);
    },
    paginateEvents(opts) {
      const list = lists["/v2/events"];
      return paginateForward((cursor) => list(opts?.query, cursor, opts?.signal), opts?.query?.starting_after);
    },
    paginate(path, opts) {
      const list = lists[path];
      return paginateForward((cursor) => list(opts?.query, cursor, opts?.signal), opts?.query?.starting_after);
    },
    paginateBackward(path, opts) {
      if (typeof opts?.query?.ending_before !== "string" || opts.query.ending_before.length === 0) {
        throw new TypeError("@audit-review/client: paginateBackward needs query.ending_before (an item id)");
      }
      const list = lists[path];
      const { query, signal } = opts;
      return paginateBackward((cursor) => list(query, cursor, signal), query.ending_before);
    },
  };
}

/** A POST's per-call options as openapi-fetch takes them: the key travels as its header parameter. */
function post(call: PostOptions | undefined): CallOptions & { header: { "Idempotency-Key"?: string } } {
  const { idempotencyKey, ...rest } = call ?? {};
  return { ...rest, header: idempotencyKey === undefined ? {} : { "Idempotency-Key": idempotencyKey } };
}

function resolveTokenSource(options: { token?: string; getToken?: TokenSource }): TokenSource {
  if (typeof options.getToken === "function") return options.getToken;
  if (typeof options.token === "string" && options.token.length > 0) {
    const token = options.token;
    return () => token;
  }
  throw new TypeError("@audit-review/client: pass either token (a non-empty string), getToken (a function) or sessionCookie: true");
}
