// The client against the real server (response validation on), on PGlite or, with
// TEST_DATABASE_URL, PostgreSQL: every public operation, pagination both ways, and errors.
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import {
  ApiError,
  createClient,
  type CodingEvaluation,
  type CreatedWebhookEndpoint,
  type QuestionSet,
  type WebhookDelivery,
  type WebhookEndpoint,
} from "../src/index.js";
import { collect, ids, observedClient, untilTotal } from "./harness.js";
import { RECEIVER_HOST, useTestServer, type TestOrg } from "./harness.js";

const server = useTestServer();

async function rejection(promise: Promise<unknown>): Promise<ApiError> {
  const err = await promise.then(
    () => expect.fail("expected the call to fail"),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

const TYPES = ["compliance", "coding", "quality", null] as const;

describe("question sets", () => {
  let org: TestOrg;
  let ingested: QuestionSet[];
  let all: QuestionSet[]; // the server's own answer in one page: the reference every walk must equal

  beforeAll(async () => {
    org = await server().newOrg();
    ingested = [];
    for (let i = 0; i < 23; i++) {
      ingested.push(
        await org.ingestQuestionSet({
          set_name: `Set ${i}`,
          set_code: `SET-${i}`,
          type: TYPES[i % 4]!,
          is_production: i % 3 === 0,
          questions: [{ query: `Question ${i}.1` }, { query: `Question ${i}.2`, question_type: "informational" }],
        }),
      );
    }
    await untilTotal(() => org.client.listQuestionSets({ include_total: "true", limit: 1 }), 23);
    all = (await org.client.listQuestionSets({ limit: 100 })).data;
  });

  it("when listing, then listQuestionSets answers every set newest first, each as ingested", async () => {
    const page = await org.client.listQuestionSets({ limit: 100, include_total: "true" });
    expect(page).toMatchObject({ object: "list", has_more: false, total_count: 23 });
    expect(ids(page.data)).toEqual(ids(ingested).reverse());
    expect(page.data).toEqual([...ingested].reverse());
  });

  it("when paginate walks with limit 5, then it fetches 5 pages and yields exactly the server's list", async () => {
    const { client, urls } = observedClient(server().url, org.token);
    const walked = await collect(client.paginate("/v2/question_sets", { query: { limit: 5 } }));
    expect(walked).toEqual(all);
    expect(urls).toHaveLength(5);
    expect(urls.map((u) => u.searchParams.get("starting_after"))).toEqual([null, ...[4, 9, 14, 19].map((i) => all[i]!.id)]);
  });

  it("when filters are given, then they pass through to every page", async () => {
    const walked = await collect(
      org.client.paginate("/v2/question_sets", { query: { is_production: "true", type: "compliance", limit: 1 } }),
    );
    const expected = all.filter((s) => s.is_production && s.type === "compliance");
    expect(expected.length).toBeGreaterThan(1);
    expect(walked).toEqual(expected);
    const nonProduction = await collect(org.client.paginate("/v2/question_sets", { query: { is_production: "false", limit: 4 } }));
    expect(nonProduction).toEqual(all.filter((s) => !s.is_production));
  });

  it("when batch-getting several ids, then exactly those sets come back (foreign ids are simply absent)", async () => {
    const wanted = [all[3]!.id, all[17]!.id, all[8]!.id];
    const page = await org.client.listQuestionSets({ id: [...wanted, randomUUID()] });
    expect(ids(page.data).sort()).toEqual([...wanted].sort());
    const walked = await collect(org.client.paginate("/v2/question_sets", { query: { id: wanted, limit: 1 } }));
    expect(walked).toEqual(all.filter((s) => wanted.includes(s.id)));
  });

  it("when paginate starts after an item, then it yields the items after it", async () => {
    const walked = await collect(org.client.paginate("/v2/question_sets", { query: { starting_after: all[6]!.id, limit: 4 } }));
    expect(walked).toEqual(all.slice(7));
  });

  it("when paginateBackward starts before the oldest set, then it yields every newer set, nearest first", async () => {
    const { client, urls } = observedClient(server().url, org.token);
    const oldest = all.at(-1)!;
    const walked = await collect(client.paginateBackward("/v2/question_sets", { query: { ending_before: oldest.id, limit: 5 } }));
    expect(walked).toEqual(all.slice(0, -1).reverse());
    expect(urls).toHaveLength(5); // 22 items: 5 + 5 + 5 + 5 + 2
    expect(urls.every((u) => !u.searchParams.has("starting_after"))).toBe(true);
  });

  it("when paginateBackward starts in the middle with a filter, then it yields the matching newer sets", async () => {
    const cursor = all[15]!;
    const walked = await collect(
      org.client.paginateBackward("/v2/question_sets", { query: { ending_before: cursor.id, is_production: "false", limit: 2 } }),
    );
    expect(walked).toEqual(all.slice(0, 15).filter((s) => !s.is_production).reverse());
  });

  it("when the cursor is not an item of this list, then the walk fails with ApiError INVALID_CURSOR", async () => {
    const err = await rejection(collect(org.client.paginate("/v2/question_sets", { query: { starting_after: randomUUID() } })));
    expect(err).toMatchObject({ status: 400, code: "INVALID_CURSOR" });
    expect(err.errors).toContainEqual(expect.objectContaining({ location: "query", name: "starting_after" }));
  });

  it("when another org walks the list, then it sees none of these sets", async () => {
    const other = await server().newOrg();
    expect(await collect(other.client.paginate("/v2/question_sets"))).toEqual([]);
    const err = await rejection(other.client.listQuestionSets({ ending_before: all[0]!.id }));
    expect(err.code).toBe("INVALID_CURSOR");
  });
});

describe("coding evaluations", () => {
  const STATUSES = ["pending", "processing", "completed", "failed"] as const;
  let org: TestOrg;
  let all: CodingEvaluation[];

  beforeAll(async () => {
    org = await server().newOrg();
    for (let i = 0; i < 14; i++) {
      await org.ingestCodingEvaluation({
        audit_id: i % 2 === 0 ? randomUUID() : null,
        status: STATUSES[i % 4]!,
        archived: i % 5 === 0,
        processed: i % 4 >= 2,
        display_date: "2026-11-20",
        ...(i % 3 === 0 ? { em_evaluation: { coding_status: "codable", score: 80 + i }, icd_evaluation: { score: 90 } } : {}),
      });
    }
    await untilTotal(() => org.client.listCodingEvaluations({ include_total: "true", limit: 1 }), 14);
    all = (await org.client.listCodingEvaluations({ limit: 100 })).data;
  });

  it("when paginate walks with limit 3, then it yields exactly the server's list", async () => {
    expect(await collect(org.client.paginate("/v2/coding_evaluations", { query: { limit: 3 } }))).toEqual(all);
    expect(all.filter((e) => e.em_evaluation !== null).length).toBe(5);
  });

  it("when filtering by status, archived, audit and creation time, then the walks equal the server's filtered data", async () => {
    const completed = await collect(org.client.paginate("/v2/coding_evaluations", { query: { status: "completed", archived: "false", limit: 1 } }));
    expect(completed).toEqual(all.filter((e) => e.status === "completed" && !e.archived));
    const pivot = all[9]!;
    const after = await collect(org.client.paginate("/v2/coding_evaluations", { query: { created_after: pivot.created_at, limit: 2 } }));
    expect(after).toEqual(all.filter((e) => e.created_at > pivot.created_at));
    const audit = all.find((e) => e.audit_id !== null)!;
    expect(await collect(org.client.paginate("/v2/coding_evaluations", { query: { audit_id: audit.audit_id! } }))).toEqual([audit]);
  });

  it("when paginateBackward walks from the oldest with a filter, then it yields the newer matches nearest first", async () => {
    const oldest = all.at(-1)!;
    const walked = await collect(
      org.client.paginateBackward("/v2/coding_evaluations", { query: { ending_before: oldest.id, status: "pending", limit: 1 } }),
    );
    expect(walked).toEqual(all.slice(0, -1).filter((e) => e.status === "pending").reverse());
    expect(walked.length).toBeGreaterThan(1);
  });
});

describe("webhook endpoints", () => {
  let org: TestOrg;
  const created: CreatedWebhookEndpoint[] = [];
  let all: WebhookEndpoint[];

  beforeAll(async () => {
    org = await server().newOrg();
    for (let i = 0; i < 20; i++) {
      created.push(
        await org.client.createWebhookEndpoint({
          url: `https://${RECEIVER_HOST}/hooks/${i}`,
          description: i % 2 === 0 ? `Receiver ${i}` : null,
          ...(i % 4 === 1 ? { filters: { audit_results: "failed" }, signing: { legacy_signature: true } } : {}),
          ...(i % 4 === 2
            ? { payload: { fields: ["data.result", "responses", "responses.answer"], responses_filter: "failed" } }
            : {}),
          ...(i % 4 === 3 ? { authentication: { type: "headers", headers: { "X-Api-Key": `key-${i}` } } } : {}),
        }),
      );
    }
    all = (await org.client.listWebhookEndpoints({ limit: 100 })).data;
  });

  it("when an endpoint is created, then it comes back with its secret once, and lists show it without the secret", () => {
    for (const endpoint of created) expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created[0]).toMatchObject({ object: "webhook_endpoint", status: "enabled", event_types: ["audit.completed"] });
    expect(created[1]!.signing.legacy_signature).toBe(true);
    expect(created[3]!.authentication).toEqual({ type: "headers", header_names: ["X-Api-Key"] });
    const withoutSecrets = created.map(({ secret: _secret, ...endpoint }) => endpoint).reverse();
    expect(all).toEqual(withoutSecrets);
    expect(JSON.stringify(all)).not.toContain("whsec_" + created[0]!.secret.slice(6, 20));
  });

  it("when paginate walks with limit 6, then it yields exactly the server's list; a status filter passes through", async () => {
    const { client, urls } = observedClient(server().url, org.token);
    expect(await collect(client.paginate("/v2/webhook_endpoints", { query: { limit: 6 } }))).toEqual(all);
    expect(urls).toHaveLength(4);
    expect(await collect(org.client.paginate("/v2/webhook_endpoints", { query: { status: "enabled", limit: 7 } }))).toEqual(all);
    expect(await collect(org.client.paginate("/v2/webhook_endpoints", { query: { status: "disabled" } }))).toEqual([]);
  });

  it("when paginateBackward walks from an item, then it yields the newer endpoints nearest first", async () => {
    const walked = await collect(org.client.paginateBackward("/v2/webhook_endpoints", { query: { ending_before: all[13]!.id, limit: 4 } }));
    expect(walked).toEqual(all.slice(0, 13).reverse());
  });

  it("when the org already has 20 endpoints, then the 21st fails with ApiError 409 ENDPOINT_LIMIT_REACHED", async () => {
    const err = await rejection(org.client.createWebhookEndpoint({ url: `https://${RECEIVER_HOST}/hooks/21` }));
    expect(err).toMatchObject({ status: 409, code: "ENDPOINT_LIMIT_REACHED" });
    expect(err.requestId).toEqual(expect.any(String));
  });
});

describe("webhook deliveries", () => {
  let org: TestOrg;
  let everything: WebhookEndpoint;
  let failedOnly: WebhookEndpoint;
  const audits: string[] = [];
  let all: WebhookDelivery[];

  beforeAll(async () => {
    org = await server().newOrg();
    const set = await org.ingestQuestionSet({ set_name: "Deliveries", set_code: "DLV", questions: [{ query: "Q1" }] });
    everything = await org.client.createWebhookEndpoint({ url: `https://${RECEIVER_HOST}/all` });
    failedOnly = await org.client.createWebhookEndpoint({ url: `https://${RECEIVER_HOST}/failed`, filters: { audit_results: "failed" } });
    for (let i = 0; i < 7; i++) {
      const auditId = randomUUID();
      audits.push(auditId);
      const published = await org.publishEvent({
        id: randomUUID(),
        type: "audit.completed",
        data: {
          audit_id: auditId,
          question_set_id: set.id,
          result: i % 2 === 0 ? "failed" : "passed",
          responses: [{ question_id: set.questions[0]!.id, answer: "No", passed: false }],
        },
      });
      expect(published.deliveries_created).toBe(i % 2 === 0 ? 2 : 1);
    }
    all = (await org.client.listWebhookDeliveries({ limit: 100 })).data;
  });

  it("when paginate walks with limit 2, then it yields exactly the server's 11 deliveries", async () => {
    expect(all).toHaveLength(11);
    const page = await org.client.listWebhookDeliveries({ include_total: "true", limit: 1 });
    expect(page).toMatchObject({ total_count: 11, has_more: true });
    expect(await collect(org.client.paginate("/v2/webhook_deliveries", { query: { limit: 2 } }))).toEqual(all);
  });

  it("when filtering by endpoint, audit, status and event type, then the walks equal the server's filtered data", async () => {
    const toFailedOnly = await collect(org.client.paginate("/v2/webhook_deliveries", { query: { endpoint_id: failedOnly.id, limit: 1 } }));
    expect(toFailedOnly).toEqual(all.filter((d) => d.endpoint_id === failedOnly.id));
    expect(toFailedOnly).toHaveLength(4);
    const ofAudit = await collect(org.client.paginate("/v2/webhook_deliveries", { query: { audit_id: audits[0]! } }));
    expect(ofAudit).toEqual(all.filter((d) => d.audit_id === audits[0]));
    expect(ofAudit).toHaveLength(2);
    const pending = await collect(
      org.client.paginate("/v2/webhook_deliveries", { query: { status: "pending", event_type: "audit.completed", limit: 5 } }),
    );
    expect(pending).toEqual(all);
    expect(await collect(org.client.paginate("/v2/webhook_deliveries", { query: { status: "succeeded" } }))).toEqual([]);
  });

  it("when paginateBackward walks from the oldest delivery of an endpoint, then it yields the newer ones nearest first", async () => {
    const ofEverything = all.filter((d) => d.endpoint_id === everything.id);
    const walked = await collect(
      org.client.paginateBackward("/v2/webhook_deliveries", {
        query: { ending_before: ofEverything.at(-1)!.id, endpoint_id: everything.id, limit: 2 },
      }),
    );
    expect(walked).toEqual(ofEverything.slice(0, -1).reverse());
  });
});

describe("portal links", () => {
  it("when a link is minted and opened, then a client in sessionCookie mode calls the portal's API with the session, no token", async () => {
    const org = await server().newOrg();
    const link = await org.client.createPortalSession({ read_only: true, expires_in: 60 });
    expect(link).toMatchObject({ object: "portal_session", read_only: true, session_duration: 3600 });
    expect(link.url.startsWith(`${server().url}/portal/${org.orgId}/start?link=pl_`)).toBe(true);
    const opened = await fetch(link.url, { redirect: "manual" });
    const cookie = opened.headers.get("set-cookie")!.split(";")[0]!;
    // what a browser does by itself: send the cookie (and, on writes, its Origin)
    const portal = createClient({ baseUrl: `${server().url}/portal/${org.orgId}/api`, sessionCookie: true, headers: { cookie, origin: server().url } });
    expect((await portal.listWebhookEndpoints()).object).toBe("list");
    expect(await rejection(portal.createWebhookEndpoint({ url: `https://${RECEIVER_HOST}/portal` }))).toMatchObject({ status: 403, code: "INSUFFICIENT_SCOPE" });
  });
});

describe("errors", () => {
  let org: TestOrg;
  beforeAll(async () => {
    org = await server().newOrg();
  });

  it("when the token is unknown, then calls fail with ApiError 401 UNAUTHENTICATED carrying the problem", async () => {
    const client = createClient({ baseUrl: server().url, token: "ars_not_a_real_token" });
    const err = await rejection(client.listQuestionSets());
    expect(err).toMatchObject({ status: 401, code: "UNAUTHENTICATED", errors: [] });
    expect(err.problem).toMatchObject({ status: 401, title: expect.any(String), type: "/problems/unauthenticated" });
    expect(err.requestId).toBe(err.problem!.request_id);
    expect(err.message).toMatch(/^401 UNAUTHENTICATED: /);
    expect(err.request).toMatchObject({ method: "GET", url: `${server().url}/v2/question_sets` });
  });

  it("when the token lacks the scope, then calls fail with ApiError 403 INSUFFICIENT_SCOPE", async () => {
    const readOnly = await org.clientWith(["question_sets:read", "webhooks:read"]);
    expect((await readOnly.listQuestionSets()).object).toBe("list");
    expect(await rejection(readOnly.listCodingEvaluations())).toMatchObject({ status: 403, code: "INSUFFICIENT_SCOPE" });
    expect(await rejection(readOnly.createWebhookEndpoint({ url: `https://${RECEIVER_HOST}/x` }))).toMatchObject({
      status: 403,
      code: "INSUFFICIENT_SCOPE",
    });
  });

  it("when a query parameter is invalid, then ApiError 400 VALIDATION_ERROR names it", async () => {
    const err = await rejection(org.client.listWebhookDeliveries({ limit: 0 }));
    expect(err).toMatchObject({ status: 400, code: "VALIDATION_ERROR" });
    expect(err.errors).toContainEqual(expect.objectContaining({ location: "query", name: "limit" }));
    const both = await rejection(org.client.listQuestionSets({ starting_after: randomUUID(), ending_before: randomUUID() }));
    expect(both).toMatchObject({ status: 400, code: "VALIDATION_ERROR" });
  });

  it("when the webhook URL is not a public https URL, then ApiError 400 INVALID_WEBHOOK_URL names url", async () => {
    for (const url of [`http://${RECEIVER_HOST}/x`, "https://127.0.0.1/x", "https://localhost/x", "https://unresolvable.client-test.dev/x"]) {
      const err = await rejection(org.client.createWebhookEndpoint({ url }));
      expect(err, url).toMatchObject({ status: 400, code: "INVALID_WEBHOOK_URL" });
      expect(err.errors).toContainEqual(expect.objectContaining({ location: "body", name: "url" }));
    }
  });

  it("when a body field is invalid, then ApiError 400 VALIDATION_ERROR names it", async () => {
    const err = await rejection(org.client.createWebhookEndpoint({ url: `https://${RECEIVER_HOST}/x`, description: "d".repeat(501) }));
    expect(err).toMatchObject({ status: 400, code: "VALIDATION_ERROR" });
    expect(err.errors).toContainEqual(expect.objectContaining({ location: "body", name: "description" }));
  });

  it("when the caller sends its own X-Request-Id, then the ApiError carries it back", async () => {
    const err = await rejection(org.client.listQuestionSets({ limit: 101 }, { headers: { "X-Request-Id": "client-test-req-1" } }));
    expect(err.requestId).toBe("client-test-req-1");
  });

  it("when the raw openapi-fetch client is used, then errors come back as { error } instead of throwing", async () => {
    const { data, error, response } = await org.client.raw.GET("/v2/question_sets", { params: { query: { limit: 0 } } });
    expect(data).toBeUndefined();
    expect(response.status).toBe(400);
    expect(error).toMatchObject({ code: "VALIDATION_ERROR" });
  });
});

describe("query encoding", () => {
  it("when a filter holds characters encodeURIComponent leaves as they are (!'()*), then the server accepts what the client sends", async () => {
    const org = await server().newOrg();
    for (const event_type of ["a(b)", "it's!", "x*y", "é ü+&=/?#"]) {
      const page = await org.client.listWebhookDeliveries({ event_type });
      expect(page, event_type).toEqual({ object: "list", data: [], has_more: false });
    }
  });

  it("when created_after has a + offset, then the client's encoding reaches the server as that instant", async () => {
    const org = await server().newOrg();
    const page = await org.client.listCodingEvaluations({ created_after: "2026-11-21T09:30:00+01:00", include_total: "true" });
    expect(page).toMatchObject({ object: "list", total_count: 0 });
  });
});
