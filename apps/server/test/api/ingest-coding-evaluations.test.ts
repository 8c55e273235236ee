import { randomUUID } from "node:crypto";
import type { CodingEvaluation, IngestCodingEvaluationRequest } from "@audit-review/api-types/internal";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { evaluationBody, ingestCodingEvaluation, problemOf, useApiServer } from "../harness/factories.js";
import type { Api } from "../harness/server.js";

const server = await useApiServer();

const put = (api: Api, id: string, body: IngestCodingEvaluationRequest) =>
  api.PUT("/v2/internal/coding_evaluations/{coding_evaluation_id}", { params: { path: { coding_evaluation_id: id } }, body });

type ListQuery = { status?: "pending" | "processing" | "completed" | "failed"; archived?: "true" | "false" };
async function listed(api: Api, query: ListQuery = {}): Promise<CodingEvaluation[]> {
  return (await api.GET("/v2/coding_evaluations", { params: { query: { limit: 100, ...query } } })).data!.data;
}

// Timestamps have millisecond precision: a faked clock (running on with real time) is moved
// past one at once, so a moved updated_at is visible without waiting.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"], shouldAdvanceTime: true });
});
afterEach(() => {
  vi.useRealTimers();
});
const tick = () => vi.advanceTimersByTime(15);

const full = (overrides: Partial<IngestCodingEvaluationRequest> = {}): IngestCodingEvaluationRequest =>
  evaluationBody({
    audit_id: randomUUID(),
    status: "processing",
    display_date: "2026-11-20",
    em_evaluation: {
      coding_status: "codable",
      score: 80,
      problems: [{ category: "chronic", description: "COPD" }],
      risk: [{ category: "rx", description: "prescription drug management" }, { category: "rx", description: "dose change" }],
    },
    icd_evaluation: { score: 90, icd_codes: [{ icd_code: "E11.65", hcc_code: "HCC37", criteria: [{ criteria_name: "MEAT - Monitor", criteria_context: "A1c 8.2%", is_criteria_met: true }] }] },
    ...overrides,
  });

describe("PUT /v2/internal/coding_evaluations/{coding_evaluation_id}", () => {
  it("when the id is new, then 201 with Location; a replacement is 200 and the list's status and archived filters see it", async () => {
    const { api, orgId } = await server.newOrg();
    const id = randomUUID();
    const body = full();

    const created = await put(api, id, body);
    expect(created.response.status).toBe(201);
    expect(created.response.headers.get("location")).toBe(`/v2/coding_evaluations/${id}`);
    expect(created.data).toMatchObject({ id, org_id: orgId, status: "processing", archived: false, em_eval_created: true, icd_eval_created: true });
    expect((await listed(api, { status: "processing" })).map((e) => e.id)).toEqual([id]);
    tick();

    const replaced = await put(api, id, { ...body, status: "completed", archived: true, marked_reviewed: true, reviewed_by: "reviewer@acme.test" });

    expect(replaced.response.status).toBe(200);
    expect(replaced.response.headers.get("location")).toBeNull();
    expect(replaced.data).toMatchObject({ status: "completed", archived: true, marked_reviewed: true, reviewed_by: "reviewer@acme.test", created_at: created.data!.created_at });
    expect(Date.parse(replaced.data!.updated_at)).toBeGreaterThan(Date.parse(created.data!.updated_at));
    expect(await listed(api, { status: "processing" })).toEqual([]);
    expect(await listed(api, { status: "completed", archived: "true" })).toEqual([replaced.data]);
    expect(await listed(api, { archived: "false" })).toEqual([]);
  });

  it("when an identical body is put again, then 200, updated_at does not move and finding ids are kept", async () => {
    const { api } = await server.newOrg();
    const id = randomUUID();
    const body = full();
    const created = (await put(api, id, body)).data!;
    tick();

    const same = await put(api, id, body);

    expect(same.response.status).toBe(200);
    expect(same.data).toEqual(created);
    expect(await listed(api)).toEqual([created]);
  });

  it("when findings change, then equal findings keep their ids, new ones get new ids, and removed findings disappear", async () => {
    const { api } = await server.newOrg();
    const id = randomUUID();
    const body = full();
    const created = (await put(api, id, body)).data!;
    const [rx, dose] = created.em_evaluation!.risk;

    const { data } = await put(api, id, { ...body, em_evaluation: { ...body.em_evaluation!, risk: [{ category: "rx", description: "dose change" }, { category: "new", description: "surgery" }] } });

    expect(data!.em_evaluation!.id).toBe(created.em_evaluation!.id);
    expect(data!.em_evaluation!.problems).toEqual(created.em_evaluation!.problems);
    expect(data!.em_evaluation!.risk.map((f) => f.id)).toEqual([dose!.id, expect.not.stringMatching(rx!.id)]);
    expect(data!.icd_evaluation).toEqual(created.icd_evaluation);
  });

  it("when a replacement omits the findings and optional fields, then they return to their defaults", async () => {
    const { api } = await server.newOrg();
    const id = randomUUID();
    await put(api, id, full({ archived: true, reviewed_by: "someone" }));

    const { data } = await put(api, id, {});

    expect(data).toMatchObject({
      audit_id: null,
      status: "pending",
      archived: false,
      reviewed_by: null,
      display_date: null,
      em_evaluation: null,
      icd_evaluation: null,
      em_eval_created: false,
      icd_eval_created: false,
    });
    expect(await listed(api)).toEqual([data]);
  });

  it("when the id is an evaluation of another org, then 404 and that evaluation is unchanged", async () => {
    const owner = await server.newOrg();
    const other = await server.newOrg();
    const evaluation = await ingestCodingEvaluation(owner.api);

    problemOf(await put(other.api, evaluation.id, full({ status: "failed" })), { status: 404, code: "NOT_FOUND" });

    expect(await listed(owner.api)).toEqual([evaluation]);
    expect(await listed(other.api)).toEqual([]);
  });

  it("when the body breaks several rules, then 400 names every offending field and nothing is stored", async () => {
    const { api } = await server.newOrg();
    const bad = { status: "done", archived: "yes", audit_id: "123", em_evaluation: { score: 101 } };

    const problem = problemOf(await put(api, randomUUID(), bad as unknown as IngestCodingEvaluationRequest), { status: 400, code: "VALIDATION_ERROR", location: "body" });

    expect(new Set(problem.errors!.map((e) => e.name))).toEqual(new Set(["status", "archived", "audit_id", "em_evaluation.coding_status", "em_evaluation.score"]));
    expect(await listed(api)).toEqual([]);
  });

  it("when the path id is not a uuid, then 400 names coding_evaluation_id", async () => {
    const { api } = await server.newOrg();
    problemOf(await put(api, "123", full()), { status: 400, code: "VALIDATION_ERROR", name: "coding_evaluation_id", location: "path" });
  });

  it("when a new id is put by concurrent requests, then one creates (201), the others replace (200), never a 500", async () => {
    const { api } = await server.newOrg();
    const id = randomUUID();

    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => put(api, id, full({ reviewed_by: `racer ${i}` }))));

    expect(results.map((r) => r.response.status).sort()).toEqual([200, 200, 200, 200, 200, 201]);
    expect((await listed(api)).map((e) => e.id)).toEqual([id]);
  });
});
