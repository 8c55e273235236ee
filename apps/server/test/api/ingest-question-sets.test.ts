import { randomUUID } from "node:crypto";
import type { IngestQuestionSetRequest, PublishEventRequest, QuestionSet } from "@audit-review/api-types/internal";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ingestQuestionSet, problemOf, questionSetBody, uniq, unknownId, useApiServer } from "../harness/factories.js";
import type { Api } from "../harness/server.js";

const server = await useApiServer();

const put = (api: Api, id: string, body: IngestQuestionSetRequest) =>
  api.PUT("/v2/internal/question_sets/{question_set_id}", { params: { path: { question_set_id: id } }, body });
const del = (api: Api, id: string) => api.DELETE("/v2/internal/question_sets/{question_set_id}", { params: { path: { question_set_id: id } } });

/** The set as the public list shows it; `deleted` asks for the deleted ones. */
async function listed(api: Api, id: string, deleted = false): Promise<QuestionSet | undefined> {
  const { data } = await api.GET("/v2/question_sets", { params: { query: { id: [id], is_deleted: deleted ? "true" : "false" } } });
  return data!.data[0];
}

const body = (overrides: Partial<IngestQuestionSetRequest> = {}): IngestQuestionSetRequest => {
  const u = uniq();
  return questionSetBody({
    set_name: `Set ${u}`,
    set_code: `SET-${u}`,
    type: "compliance",
    is_production: true,
    thresholds: [{ label: "pass", min_score: 80 }],
    questions: [{ query: "First?", question_type: "yes_no", severity: "high" }, { query: "Second?" }],
    ...overrides,
  });
};

// Timestamps have millisecond precision: a faked clock (running on with real time) is moved
// past one at once, so a moved updated_at is visible without waiting.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"], shouldAdvanceTime: true });
});
afterEach(() => {
  vi.useRealTimers();
});
const tick = () => vi.advanceTimersByTime(15);

describe("PUT /v2/internal/question_sets/{question_set_id}", () => {
  it("when the id is new, then 201 with Location; when it exists, then 200 replaces it and keeps created_at", async () => {
    const { api, orgId } = await server.newOrg();
    const id = randomUUID();

    const created = await put(api, id, body({ set_name: "Original" }));
    tick();
    const replaced = await put(api, id, body({ set_name: "Renamed", type: "coding", is_production: false, thresholds: [] }));

    expect(created.response.status).toBe(201);
    expect(created.response.headers.get("location")).toBe(`/v2/question_sets/${id}`);
    expect(created.data).toMatchObject({ id, org_id: orgId, set_name: "Original", is_deleted: false });
    expect(replaced.response.status).toBe(200);
    expect(replaced.response.headers.get("location")).toBeNull();
    expect(replaced.data).toMatchObject({ id, set_name: "Renamed", type: "coding", is_production: false, thresholds: [], created_at: created.data!.created_at });
    expect(await listed(api, id)).toEqual(replaced.data);
  });

  it("when questions carry their ids, then the ids stay stable across replacements and the body order is the set order", async () => {
    const { api } = await server.newOrg();
    const id = randomUUID();
    const chosen = randomUUID();
    const first = (await put(api, id, body({ questions: [{ query: "A?" }, { id: chosen, query: "B?" }] }))).data!;
    const [a, b] = first.questions;
    expect(b!.id).toBe(chosen);

    const { data } = await put(api, id, body({ questions: [{ id: b!.id, query: "B, reworded?" }, { query: "C?" }, { id: a!.id, query: "A?", severity: "low" }] }));

    expect(data!.questions.map((q) => [q.id, q.query, q.severity])).toEqual([
      [b!.id, "B, reworded?", null],
      [expect.not.stringMatching(new RegExp(`^(${a!.id}|${b!.id})$`)), "C?", null],
      [a!.id, "A?", "low"],
    ]);
    expect((await listed(api, id))!.questions).toEqual(data!.questions);
  });

  it("when a question is left out or marked is_deleted, then it is omitted from the list; naming its id again restores it", async () => {
    const { api } = await server.newOrg();
    const id = randomUUID();
    const [a, b, c] = (await put(api, id, body({ questions: [{ query: "A?" }, { query: "B?" }, { query: "C?" }] }))).data!.questions;

    const dropped = await put(api, id, body({ questions: [{ id: a!.id, query: "A?" }, { id: c!.id, query: "C?", is_deleted: true }] }));
    expect(dropped.data!.questions.map((q) => q.id)).toEqual([a!.id]);
    expect((await listed(api, id))!.questions.map((q) => q.id)).toEqual([a!.id]);

    const restored = await put(api, id, body({ questions: [{ id: c!.id, query: "C?" }, { id: b!.id, query: "B?" }, { id: a!.id, query: "A?" }] }));
    expect(restored.data!.questions.map((q) => q.id)).toEqual([c!.id, b!.id, a!.id]);
  });

  it("when an identical body is put again, then 200 and updated_at does not move; any change moves it", async () => {
    const { api } = await server.newOrg();
    const id = randomUUID();
    const questionId = randomUUID();
    const original = body({ questions: [{ id: questionId, query: "Q?", question_type: "yes_no", severity: "high", remediation: "Fix." }] });
    const created = (await put(api, id, original)).data!;
    tick();

    const same = await put(api, id, original);
    expect(same.response.status).toBe(200);
    expect(same.data).toEqual(created);

    const changes: Array<Partial<IngestQuestionSetRequest>> = [
      { set_code: `X-${uniq()}` },
      { thresholds: [{ label: "pass", min_score: 81 }] },
      { questions: [{ id: questionId, query: "Q?", question_type: "yes_no", severity: "low", remediation: "Fix." }] },
      { questions: [{ id: questionId, query: "Q?", question_type: "yes_no", severity: "low", remediation: "Fix." }, { query: "New?" }] },
    ];
    let previous = created.updated_at;
    let state = original;
    for (const change of changes) {
      state = { ...state, ...change };
      tick();
      const { data } = await put(api, id, state);
      expect(Date.parse(data!.updated_at), JSON.stringify(change)).toBeGreaterThan(Date.parse(previous));
      expect(data!.created_at).toBe(created.created_at);
      previous = data!.updated_at;
    }
  });

  it("when an older set is replaced, then list order still follows created_at, not updated_at", async () => {
    const { api } = await server.newOrg();
    const older = await ingestQuestionSet(api);
    const newer = await ingestQuestionSet(api);
    tick();

    await put(api, older.id, body({ set_name: "Touched" }));

    const { data } = await api.GET("/v2/question_sets", { params: { query: { limit: 10 } } });
    expect(data!.data.map((s) => s.id)).toEqual([newer.id, older.id]);
  });

  it("when the body says is_deleted, then the set is listed only with is_deleted=true; a later body without it restores the set", async () => {
    const { api } = await server.newOrg();
    const id = randomUUID();
    await put(api, id, body({ is_deleted: true }));
    expect(await listed(api, id)).toBeUndefined();
    expect(await listed(api, id, true)).toMatchObject({ id, is_deleted: true });

    await put(api, id, body());
    expect(await listed(api, id)).toMatchObject({ id, is_deleted: false });
  });

  it("when the id is a set of another org, then 404 and that set is unchanged", async () => {
    const owner = await server.newOrg();
    const other = await server.newOrg();
    const set = await ingestQuestionSet(owner.api);

    problemOf(await put(other.api, set.id, body({ set_name: "Hijacked" })), { status: 404, code: "NOT_FOUND" });
    problemOf(await del(other.api, set.id), { status: 404, code: "NOT_FOUND" });

    expect(await listed(owner.api, set.id)).toEqual(set);
    expect((await other.api.GET("/v2/question_sets", { params: { query: { is_deleted: "true" } } })).data!.data).toEqual([]);
    expect((await other.api.GET("/v2/question_sets")).data!.data).toEqual([]);
  });

  it("when the body breaks several rules, then 400 names every offending field and nothing is stored", async () => {
    const { api } = await server.newOrg();
    const id = randomUUID();
    const bad = { set_code: "", type: "rubric", is_deleted: "yes", questions: [{ id: "q1", query: "Q?" }, { query: "R?", is_deleted: 1 }] };

    const problem = problemOf(await put(api, id, bad as unknown as IngestQuestionSetRequest), { status: 400, code: "VALIDATION_ERROR", location: "body" });

    expect(problem.errors!.map((e) => e.name).sort()).toEqual(["is_deleted", "questions.0.id", "questions.1.is_deleted", "set_code", "set_name", "type"]);
    expect(await listed(api, id)).toBeUndefined();
  });

  it("when the path id is not a uuid, then 400 names question_set_id", async () => {
    const { api } = await server.newOrg();
    problemOf(await put(api, "not-a-uuid", body()), { status: 400, code: "VALIDATION_ERROR", name: "question_set_id", location: "path" });
    problemOf(await del(api, "not-a-uuid"), { status: 400, code: "VALIDATION_ERROR", name: "question_set_id", location: "path" });
  });

  it("when question ids repeat or belong to other sets (any org), then 400 names each of them and the stored set is intact", async () => {
    const { api } = await server.newOrg();
    const other = await server.newOrg();
    const mine = await ingestQuestionSet(api);
    const foreign = await ingestQuestionSet(other.api);
    const id = randomUUID();
    const before = (await put(api, id, body({ set_name: "Before" }))).data!;
    const repeated = randomUUID();

    const failed = await put(
      api,
      id,
      body({
        set_name: "After",
        questions: [
          { query: "new?" },
          { id: mine.questions[0]!.id, query: "stolen?" },
          { id: repeated, query: "one?" },
          { id: repeated, query: "two?" },
          { id: foreign.questions[0]!.id, query: "foreign?" },
        ],
      }),
    );

    const problem = problemOf(failed, { status: 400, code: "VALIDATION_ERROR", name: "questions.1.id", location: "body" });
    expect(problem.errors!.map((e) => e.name)).toEqual(["questions.1.id", "questions.3.id", "questions.4.id"]);
    expect(problem.errors![0]!.message).toBe(problem.errors![2]!.message);
    expect(await listed(api, id)).toEqual(before);
    expect(await listed(api, mine.id)).toEqual(mine);
    expect(await listed(other.api, foreign.id)).toEqual(foreign);
  });

  it("when a new id is put by concurrent requests, then one creates (201), the others replace (200), never a 500", async () => {
    const { api } = await server.newOrg();
    const id = randomUUID();
    const questionId = randomUUID();
    const requests = Array.from({ length: 6 }, (_, i) => put(api, id, body({ set_name: `Racer ${i}`, questions: [{ id: questionId, query: `Q${i}?` }, { query: `extra ${i}?` }] })));

    const results = await Promise.all(requests);

    expect(results.map((r) => r.response.status).sort()).toEqual([200, 200, 200, 200, 200, 201]);
    const set = await listed(api, id);
    expect(set!.questions[0]!.id).toBe(questionId);
    expect(set!.questions).toHaveLength(2);
    expect((await api.GET("/v2/question_sets", { params: { query: { include_total: "true" } } })).data!.total_count).toBe(1);
  });
});

describe("DELETE /v2/internal/question_sets/{question_set_id}", () => {
  it("when a set is deleted, then 204 and it is listed only with is_deleted=true, its questions kept; deleting again is 204", async () => {
    const { api } = await server.newOrg();
    const set = await ingestQuestionSet(api);

    const first = await del(api, set.id);
    const deleted = await listed(api, set.id, true);
    tick();
    const second = await del(api, set.id);

    expect(first.response.status).toBe(204);
    expect(second.response.status).toBe(204);
    expect(await listed(api, set.id)).toBeUndefined();
    expect(deleted).toMatchObject({ id: set.id, is_deleted: true, questions: set.questions });
    expect(Date.parse(deleted!.updated_at)).toBeGreaterThanOrEqual(Date.parse(set.updated_at));
    expect(await listed(api, set.id, true)).toEqual(deleted);
  });

  it("when the id is unknown, then 404", async () => {
    const { api } = await server.newOrg();
    problemOf(await del(api, unknownId()), { status: 404, code: "NOT_FOUND" });
  });
});

describe("POST /v2/internal/question_sets with is_deleted", () => {
  it("when the set and a question are ingested deleted, then the set is listed only with is_deleted=true and the question omitted", async () => {
    const { api } = await server.newOrg();

    const set = await ingestQuestionSet(api, { is_deleted: true, questions: [{ query: "kept?" }, { query: "gone?", is_deleted: true }] });

    expect(set.is_deleted).toBe(true);
    expect(set.questions.map((q) => q.query)).toEqual(["kept?"]);
    expect(await listed(api, set.id)).toBeUndefined();
    expect(await listed(api, set.id, true)).toEqual(set);
  });
});

describe("publishing events against a replaced set", () => {
  it("when a set was replaced, then an event resolves its kept questions with their new text, and one naming a removed question still publishes", async () => {
    const { api } = await server.newOrg();
    const id = randomUUID();
    const [a, b] = (await put(api, id, body({ questions: [{ query: "A?" }, { query: "B?" }] }))).data!.questions;
    await put(api, id, body({ questions: [{ id: a!.id, query: "A, reworded?" }] }));
    const event = (responses: NonNullable<PublishEventRequest["data"]["responses"]>): PublishEventRequest => ({
      id: randomUUID(),
      type: "audit.completed",
      data: { audit_id: randomUUID(), question_set_id: id, result: "failed", responses },
    });

    const kept = await api.POST("/v2/internal/events", { body: event([{ question_id: a!.id, answer: "No", passed: false }]) });
    const removed = await api.POST("/v2/internal/events", { body: event([{ question_id: b!.id, answer: "Yes", passed: true }]) });
    const unknown = await api.POST("/v2/internal/events", { body: event([{ question_id: randomUUID(), answer: "Yes", passed: true }]) });

    expect(kept.response.status).toBe(201);
    expect(removed.response.status).toBe(201);
    problemOf(unknown, { status: 400, code: "VALIDATION_ERROR", name: "data.responses.0.question_id" });
  });
});
