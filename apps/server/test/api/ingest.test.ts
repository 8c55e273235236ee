import { randomUUID } from "node:crypto";
import type { IngestCodingEvaluationRequest, IngestQuestionSetRequest, PublishEventRequest } from "@audit-review/api-types/internal";
import { describe, expect, it } from "vitest";
import { createEndpoint, evaluationBody, ingestQuestionSet, problemOf, publishEvent, questionSetBody, useApiServer } from "../harness/factories.js";
import type { Api } from "../harness/server.js";

const server = await useApiServer();

const deliveries = async (api: Api) => (await api.GET("/v2/webhook_deliveries", { params: { query: { limit: 100 } } })).data!.data;
const admin = (api: Api, id: string, _action: "disable") =>
  api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: id } }, body: { status: "disabled" } });

describe("POST /v2/internal/question_sets", () => {
  it("when a set is ingested, then 201 with Location, the set and its questions in the given order", async () => {
    const { api, orgId } = await server.newOrg();

    const { data, response } = await api.POST("/v2/internal/question_sets", {
      body: questionSetBody({ set_name: "Coding review", set_code: "COD-1", type: "coding", questions: [{ query: "b?" }, { query: "a?" }, { query: "c?" }] }),
    });

    expect(response.status).toBe(201);
    expect(response.headers.get("location")).toBe(`/v2/question_sets/${data!.id}`);
    expect(data).toMatchObject({ object: "question_set", org_id: orgId, set_name: "Coding review", type: "coding", is_deleted: false });
    expect(data!.questions.map((q) => q.query)).toEqual(["b?", "a?", "c?"]);
  });

  it.each([
    ["no set_name", { set_code: "X" }, "set_name"],
    ["an empty set_code", { set_name: "X", set_code: "" }, "set_code"],
    ["an unknown type", { set_name: "X", set_code: "X", type: "rubric" }, "type"],
    ["a question without query", { set_name: "X", set_code: "X", questions: [{ severity: "high" }] }, "questions.0.query"],
    ["an unknown severity", { set_name: "X", set_code: "X", questions: [{ query: "q", severity: "urgent" }] }, "questions.0.severity"],
    ["a threshold above 100", { set_name: "X", set_code: "X", thresholds: [{ label: "pass", min_score: 101 }] }, "thresholds.0.min_score"],
    ["an unknown field", { set_name: "X", set_code: "X", deleted: true }, "deleted"],
  ])("when the body has %s, then 400 names %s", async (_label, body, name) => {
    const { api } = await server.newOrg();
    problemOf(await api.POST("/v2/internal/question_sets", { body: body as IngestQuestionSetRequest }), { status: 400, code: "VALIDATION_ERROR", name, location: "body" });
    expect((await api.GET("/v2/question_sets")).data!.data).toEqual([]);
  });
});

describe("POST /v2/internal/coding_evaluations", () => {
  it("when an evaluation is ingested, then 201 with Location and server-assigned finding ids", async () => {
    const { api } = await server.newOrg();

    const { data, response } = await api.POST("/v2/internal/coding_evaluations", {
      body: evaluationBody({ status: "completed", em_evaluation: { coding_status: "codable", risk: [{ category: "rx", description: "prescription drug management" }] } }),
    });

    expect(response.status).toBe(201);
    expect(response.headers.get("location")).toBe(`/v2/coding_evaluations/${data!.id}`);
    expect(data!.em_evaluation!.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(data!.em_evaluation!.risk[0]!.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(data!.em_evaluation!.id).not.toBe(data!.id);
  });

  it.each([
    ["an unknown status", { status: "done" }, "status"],
    ["a bad audit_id", { audit_id: "123" }, "audit_id"],
    ["an impossible display_date", { display_date: "2026-02-30" }, "display_date"],
    ["an E/M finding without coding_status", { em_evaluation: { score: 5 } }, "em_evaluation.coding_status"],
    ["a score above 100", { icd_evaluation: { score: 101 } }, "icd_evaluation.score"],
    ["a caller-chosen em_eval_created", { em_eval_created: true }, "em_eval_created"],
  ])("when the body has %s, then 400 names %s", async (_label, body, name) => {
    const { api } = await server.newOrg();
    problemOf(await api.POST("/v2/internal/coding_evaluations", { body: body as IngestCodingEvaluationRequest }), { status: 400, code: "VALIDATION_ERROR", name, location: "body" });
  });
});

describe("POST /v2/internal/events", () => {
  it("when an event is published, then one pending delivery is created per matching endpoint", async () => {
    const { api } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    const otherSet = await ingestQuestionSet(api);
    const all = await createEndpoint(api);
    const forSet = await createEndpoint(api, { filters: { question_set_ids: [set.id] } });
    const forOtherSet = await createEndpoint(api, { filters: { question_set_ids: [otherSet.id] } });
    const failedOnly = await createEndpoint(api, { filters: { audit_results: "failed" } });
    const passedOnly = await createEndpoint(api, { filters: { audit_results: "passed" } });
    const disabled = await createEndpoint(api);
    const deleted = await createEndpoint(api);
    await admin(api, disabled.id, "disable");
    await api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: deleted.id } } });

    const { event, request } = await publishEvent(api, { data: { question_set_id: set.id, result: "failed" } });

    expect(event).toEqual({ object: "event", id: request.id, type: "audit.completed", created: true, deliveries_created: 3 });
    const listed = await deliveries(api);
    expect(listed.map((d) => d.endpoint_id).sort()).toEqual([all.id, forSet.id, failedOnly.id].sort());
    expect(listed.every((d) => d.event_id === request.id && d.status === "pending" && !d.is_test)).toBe(true);
    expect(listed.map((d) => d.endpoint_id)).not.toContain(forOtherSet.id);
    expect(listed.map((d) => d.endpoint_id)).not.toContain(passedOnly.id);
  });

  it("when the same event id is published again, then 200 created false and no new delivery", async () => {
    const { api } = await server.newOrg();
    await createEndpoint(api);
    const first = await publishEvent(api);

    const again = await api.POST("/v2/internal/events", { body: first.request });

    expect(again.response.status).toBe(200);
    expect(again.data).toEqual({ object: "event", id: first.request.id, type: "audit.completed", created: false, deliveries_created: 0 });
    expect(await deliveries(api)).toHaveLength(1);
  });

  it("when another org reuses an event id, then 400 and nothing is created for either org", async () => {
    const a = await server.newOrg();
    const b = await server.newOrg();
    await createEndpoint(b.api);
    const { request } = await publishEvent(a.api);
    const set = await ingestQuestionSet(b.api);

    const reused = await b.api.POST("/v2/internal/events", { body: { ...request, data: { ...request.data, question_set_id: set.id } } });

    problemOf(reused, { status: 400, code: "VALIDATION_ERROR", name: "id" });
    expect(await deliveries(b.api)).toEqual([]);
  });

  it("when the question set is unknown or of another org, then 400 names data.question_set_id", async () => {
    const { api } = await server.newOrg();
    const other = await server.newOrg();
    const foreign = await ingestQuestionSet(other.api);
    await createEndpoint(api);

    for (const questionSetId of [randomUUID(), foreign.id]) {
      const body: PublishEventRequest = { id: randomUUID(), type: "audit.completed", data: { audit_id: randomUUID(), question_set_id: questionSetId, result: "passed" } };
      problemOf(await api.POST("/v2/internal/events", { body }), { status: 400, code: "VALIDATION_ERROR", name: "data.question_set_id" });
    }
    expect(await deliveries(api)).toEqual([]);
  });

  it("when a response names a question of another set, then 400 names that response", async () => {
    const { api } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    const otherSet = await ingestQuestionSet(api);
    const body: PublishEventRequest = {
      id: randomUUID(),
      type: "audit.completed",
      data: {
        audit_id: randomUUID(),
        question_set_id: set.id,
        result: "failed",
        responses: [
          { question_id: set.questions[0]!.id, answer: "No", passed: false },
          { question_id: otherSet.questions[0]!.id, answer: "Yes", passed: true },
        ],
      },
    };

    problemOf(await api.POST("/v2/internal/events", { body }), { status: 400, code: "VALIDATION_ERROR", name: "data.responses.1.question_id" });
  });

  it.each([
    ["no id", { type: "audit.completed", data: { audit_id: randomUUID(), question_set_id: randomUUID(), result: "passed" } }, "id"],
    ["an unknown type", { id: randomUUID(), type: "audit.started", data: { audit_id: randomUUID(), question_set_id: randomUUID(), result: "passed" } }, "type"],
    ["an unknown result", { id: randomUUID(), type: "audit.completed", data: { audit_id: randomUUID(), question_set_id: randomUUID(), result: "ok" } }, "data.result"],
    ["no audit_id", { id: randomUUID(), type: "audit.completed", data: { question_set_id: randomUUID(), result: "passed" } }, "data.audit_id"],
  ])("when the body has %s, then 400 names %s", async (_label, body, name) => {
    const { api } = await server.newOrg();
    problemOf(await api.POST("/v2/internal/events", { body: body as PublishEventRequest }), { status: 400, code: "VALIDATION_ERROR", name, location: "body" });
  });
});
