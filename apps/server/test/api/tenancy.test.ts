import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { createBody, createEndpoint, ingestCodingEvaluation, ingestQuestionSet, PUBLIC_HOST, problemOf, publishEvent, unknownId, useApiServer } from "../harness/factories.js";
import type { Api, TestOrg } from "../harness/server.js";

const server = await useApiServer();

/** One org's data: a set, an evaluation, an endpoint and a delivery. */
async function seed(api: Api) {
  const set = await ingestQuestionSet(api);
  const evaluation = await ingestCodingEvaluation(api);
  const endpoint = await createEndpoint(api);
  const { request: event } = await publishEvent(api, { data: { question_set_id: set.id } });
  const [delivery] = (await api.GET("/v2/webhook_deliveries")).data!.data;
  return { set, evaluation, endpoint, event, delivery: delivery! };
}

let a: TestOrg & { data: Awaited<ReturnType<typeof seed>> };
let b: TestOrg & { data: Awaited<ReturnType<typeof seed>> };

beforeAll(async () => {
  const orgA = await server.newOrg();
  const orgB = await server.newOrg();
  a = { ...orgA, data: await seed(orgA.api) };
  b = { ...orgB, data: await seed(orgB.api) };
});

describe("tenancy: org B's token against org A's ids", () => {
  it("when B lists anything, then only B's rows are listed and counted", async () => {
    const q = { include_total: "true" as const, limit: 100 };
    const lists: Array<{ data: Array<{ id: string; org_id: string }>; total_count?: number }> = [
      (await b.api.GET("/v2/question_sets", { params: { query: q } })).data!,
      (await b.api.GET("/v2/coding_evaluations", { params: { query: q } })).data!,
      (await b.api.GET("/v2/webhook_endpoints", { params: { query: q } })).data!,
      (await b.api.GET("/v2/webhook_deliveries", { params: { query: q } })).data!,
    ];

    expect(lists.map((l) => l.data.map((row) => row.id))).toEqual([[b.data.set.id], [b.data.evaluation.id], [b.data.endpoint.id], [b.data.delivery.id]]);
    expect(lists.map((l) => l.total_count)).toEqual([1, 1, 1, 1]);
    expect(lists.flatMap((l) => l.data).every((row) => row.org_id === b.orgId)).toBe(true);
  });

  it("when B batch-gets A's ids, then they are absent and not counted", async () => {
    const sets = await b.api.GET("/v2/question_sets", { params: { query: { id: [a.data.set.id, b.data.set.id], include_total: "true" } } });
    const deletedToo = await b.api.GET("/v2/question_sets", { params: { query: { id: [a.data.set.id], is_deleted: "true", include_total: "true" } } });
    const evaluations = await b.api.GET("/v2/coding_evaluations", { params: { query: { id: [a.data.evaluation.id], include_total: "true" } } });

    expect(sets.data).toMatchObject({ data: [{ id: b.data.set.id }], total_count: 1 });
    expect(deletedToo.data).toMatchObject({ data: [], total_count: 0 });
    expect(evaluations.data).toMatchObject({ data: [], total_count: 0 });
  });

  it("when B uses A's ids as cursors, then 400 INVALID_CURSOR exactly as for an unknown id", async () => {
    const cases = [
      ["/v2/question_sets", a.data.set.id],
      ["/v2/coding_evaluations", a.data.evaluation.id],
      ["/v2/webhook_endpoints", a.data.endpoint.id],
      ["/v2/webhook_deliveries", a.data.delivery.id],
    ] as const;
    for (const [path, foreignId] of cases) {
      for (const cursor of ["starting_after", "ending_before"] as const) {
        const foreign = await b.api.GET(path, { params: { query: { [cursor]: foreignId } } });
        const unknown = await b.api.GET(path, { params: { query: { [cursor]: unknownId() } } });
        const fp = problemOf(foreign, { status: 400, code: "INVALID_CURSOR", name: cursor });
        const up = problemOf(unknown, { status: 400, code: "INVALID_CURSOR", name: cursor });
        expect({ ...fp, request_id: "" }).toEqual({ ...up, request_id: "" });
      }
    }
  });

  it("when B filters by A's audit and endpoint ids, then nothing is listed", async () => {
    const byAudit = await b.api.GET("/v2/coding_evaluations", { params: { query: { audit_id: a.data.evaluation.audit_id!, include_total: "true" } } });
    const byEndpoint = await b.api.GET("/v2/webhook_deliveries", { params: { query: { endpoint_id: a.data.endpoint.id, include_total: "true" } } });
    const byEventAudit = await b.api.GET("/v2/webhook_deliveries", { params: { query: { audit_id: a.data.event.data.audit_id, include_total: "true" } } });

    for (const res of [byAudit, byEndpoint, byEventAudit]) expect(res.data).toMatchObject({ data: [], has_more: false, total_count: 0 });
  });

  it("when B subscribes an endpoint to A's question set, then 400 exactly as for an unknown set", async () => {
    const foreign = await b.api.POST("/v2/webhook_endpoints", { body: createBody({ url: `https://${PUBLIC_HOST}/t`, filters: { question_set_ids: [a.data.set.id] } }) });
    const unknown = await b.api.POST("/v2/webhook_endpoints", { body: createBody({ url: `https://${PUBLIC_HOST}/t`, filters: { question_set_ids: [unknownId()] } }) });

    const fp = problemOf(foreign, { status: 400, code: "VALIDATION_ERROR", name: "filters.question_set_ids" });
    const up = problemOf(unknown, { status: 400, code: "VALIDATION_ERROR", name: "filters.question_set_ids" });
    expect(fp.detail.replace(a.data.set.id, "<id>")).toBe(up.detail.replace(/[0-9a-f-]{36}/, "<id>"));
    expect((await b.api.GET("/v2/webhook_endpoints")).data!.data).toHaveLength(1);
  });

  it("when B publishes an event about A's question set or A's questions, then 400 and no delivery", async () => {
    const aboutSet = await b.api.POST("/v2/internal/events", {
      body: { id: randomUUID(), type: "audit.completed", data: { audit_id: randomUUID(), question_set_id: a.data.set.id, result: "failed" } },
    });
    const aboutQuestion = await b.api.POST("/v2/internal/events", {
      body: {
        id: randomUUID(),
        type: "audit.completed",
        data: { audit_id: randomUUID(), question_set_id: b.data.set.id, result: "failed", responses: [{ question_id: a.data.set.questions[0]!.id, answer: "x" }] },
      },
    });

    problemOf(aboutSet, { status: 400, code: "VALIDATION_ERROR", name: "data.question_set_id" });
    problemOf(aboutQuestion, { status: 400, code: "VALIDATION_ERROR", name: "data.responses.0.question_id" });
    expect((await a.api.GET("/v2/webhook_deliveries")).data!.data).toHaveLength(1);
    expect((await b.api.GET("/v2/webhook_deliveries")).data!.data).toHaveLength(1);
  });

  it("when B administers A's endpoint, then 404 exactly as for an unknown one, and A's endpoint is untouched", async () => {
    const path = { params: { path: { endpoint_id: a.data.endpoint.id } } };
    const unknownPath = { params: { path: { endpoint_id: unknownId() } } };
    const attempts = [
      [await b.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { ...path, body: { status: "disabled" } }), await b.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { ...unknownPath, body: { status: "disabled" } })],
      [await b.api.POST("/v2/webhook_endpoints/{endpoint_id}/rotate_secret", path), await b.api.POST("/v2/webhook_endpoints/{endpoint_id}/rotate_secret", unknownPath)],
      [await b.api.POST("/v2/webhook_endpoints/{endpoint_id}/test", path), await b.api.POST("/v2/webhook_endpoints/{endpoint_id}/test", unknownPath)],
      [await b.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { ...path, body: { status: "enabled" } }), await b.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { ...unknownPath, body: { status: "enabled" } })],
      [await b.api.DELETE("/v2/webhook_endpoints/{endpoint_id}", path), await b.api.DELETE("/v2/webhook_endpoints/{endpoint_id}", unknownPath)],
    ];

    for (const [foreign, unknown] of attempts) {
      const fp = problemOf(foreign!, { status: 404, code: "NOT_FOUND" });
      const up = problemOf(unknown!, { status: 404, code: "NOT_FOUND" });
      expect({ ...fp, request_id: "" }).toEqual({ ...up, request_id: "" });
    }
    const listed = (await a.api.GET("/v2/webhook_endpoints")).data!.data;
    expect(listed).toEqual([expect.objectContaining({ id: a.data.endpoint.id, status: "enabled", signing: a.data.endpoint.signing })]);
    expect((await a.api.GET("/v2/webhook_deliveries")).data!.data).toHaveLength(1);
  });

  it("when A publishes an event, then B's endpoints get no delivery", async () => {
    const freshA = await server.newOrg();
    const freshB = await server.newOrg();
    await createEndpoint(freshA.api);
    await createEndpoint(freshB.api);

    const { event } = await publishEvent(freshA.api);

    expect(event.deliveries_created).toBe(1);
    expect((await freshA.api.GET("/v2/webhook_deliveries")).data!.data).toHaveLength(1);
    expect((await freshB.api.GET("/v2/webhook_deliveries")).data!.data).toEqual([]);
  });
});
