import type { operations, QuestionSet } from "@audit-review/api-types/internal";
import { describe, expect, it } from "vitest";
import { ingestCodingEvaluation, ingestQuestionSet, problemOf, questionSetBody, unknownId, useApiServer } from "../harness/factories.js";
import { describeKeysetList, oneAfterAnother, pagerOf } from "../harness/keyset-list.js";
import { expectWalksAgree, ids } from "../harness/pagination.js";
import type { Api } from "../harness/server.js";

type Query = NonNullable<operations["listQuestionSets"]["parameters"]["query"]>;

const server = await useApiServer();
const prisma = server.server.db.prisma;

const list = (api: Api, query: Query = {}) => api.GET("/v2/question_sets", { params: { query } });
const pager = (api: Api, filters: Query = {}) => pagerOf((page) => list(api, { ...filters, ...page }));

/** Ingests `n` sets one after another; returns them newest first (list order). */
const ingestMany = async (api: Api, n: number, overrides: Parameters<typeof ingestQuestionSet>[1] = {}): Promise<QuestionSet[]> =>
  (await oneAfterAnother(n, () => ingestQuestionSet(api, overrides))).reverse();

const markDeleted = (id: string) => prisma.questionSet.update({ where: { id }, data: { is_deleted: true } });

describeKeysetList<QuestionSet>({
  items: "question sets",
  path: "/v2/question_sets",
  server,
  list,
  createMany: (api, n) => ingestMany(api, n),
  idsOfOtherLists: async (api) => [(await ingestCodingEvaluation(api)).id],
  badQueries: [
    ["is_production=yes", "is_production"],
    ["is_production=", "is_production"],
    ["is_deleted=1", "is_deleted"],
    ["type=rubric", "type"],
    ["id=not-a-uuid", "id"],
    ["status=completed", "status"],
  ],
});

describe("GET /v2/question_sets", () => {
  it("when a set is ingested, then it is listed with every field and its questions in set order", async () => {
    const { api, orgId } = await server.newOrg();
    const set = await ingestQuestionSet(api, {
      set_name: "ED documentation review",
      set_code: "ED-DOC-01",
      type: "clinical_documentation",
      is_production: true,
      allow_doc_upload: true,
      thresholds: [{ label: "pass", min_score: 80 }, { label: "fail", min_score: 0 }],
      questions: [
        { query: "Chief complaint documented?", question_type: "yes_no", severity: "high", remediation: "Document it." },
        { query: "Any notes?", question_type: "informational" },
        { query: "ROS complete?", question_type: "multiple_choice", severity: "low" },
      ],
    });

    const { data, response } = await list(api);

    expect(response.status).toBe(200);
    expect(data).toEqual({ object: "list", data: [set], has_more: false });
    expect(set).toMatchObject({
      object: "question_set",
      org_id: orgId,
      set_name: "ED documentation review",
      set_code: "ED-DOC-01",
      type: "clinical_documentation",
      is_production: true,
      is_deleted: false,
      allow_doc_upload: true,
      thresholds: [{ label: "pass", min_score: 80 }, { label: "fail", min_score: 0 }],
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect(set.questions).toEqual([
      { id: expect.any(String), object: "question", query: "Chief complaint documented?", question_type: "yes_no", severity: "high", remediation: "Document it." },
      { id: expect.any(String), object: "question", query: "Any notes?", question_type: "informational", severity: null, remediation: null },
      { id: expect.any(String), object: "question", query: "ROS complete?", question_type: "multiple_choice", severity: "low", remediation: null },
    ]);
  });

  it("when a set is ingested with only its name and code, then the optional fields take their defaults", async () => {
    const { api } = await server.newOrg();
    const { data } = await api.POST("/v2/internal/question_sets", { body: questionSetBody({ set_name: "Minimal", set_code: "MIN" }) });

    const listed = (await list(api)).data!.data[0];
    expect(listed).toEqual(data);
    expect(listed).toMatchObject({ type: null, is_production: false, is_deleted: false, allow_doc_upload: false, thresholds: [], questions: [] });
  });

  it("when a question is deleted or moved, then the set embeds only live questions, in set order", async () => {
    const { api } = await server.newOrg();
    const set = await ingestQuestionSet(api, { questions: [{ query: "first" }, { query: "second" }, { query: "third" }, { query: "fourth" }] });
    const [first, second, third, fourth] = set.questions.map((q) => q.id) as [string, string, string, string];
    await prisma.question.update({ where: { id: second }, data: { is_deleted: true } });
    // set order is the position, not the id or creation order
    await prisma.question.update({ where: { id: first }, data: { position: 10 } });

    const listed = (await list(api)).data!.data[0]!;

    expect(listed.questions.map((q) => q.id)).toEqual([third, fourth, first]);
  });

  it("when include_total is true with a filter, then total_count counts only the matching sets, ignoring cursor and limit", async () => {
    const { api } = await server.newOrg();
    const sets = await ingestMany(api, 5, { type: "coding" });
    await ingestMany(api, 2, { type: "quality" });

    const later = await list(api, { include_total: "true", limit: 1, type: "coding", starting_after: sets[2]!.id });
    const all = await list(api, { include_total: "true" });

    expect(later.data).toMatchObject({ total_count: 5, has_more: true, data: [{ id: sets[3]!.id }] });
    expect(all.data!.total_count).toBe(7);
  });

  it("when filtering by type, then only sets of that type are listed, across pages", async () => {
    const { api } = await server.newOrg();
    const coding: QuestionSet[] = [];
    for (let i = 0; i < 4; i++) {
      coding.unshift(await ingestQuestionSet(api, { type: "coding" }));
      await ingestQuestionSet(api, { type: i % 2 ? "compliance" : null });
    }

    await expectWalksAgree(pager(api, { type: "coding" }), ids(coding), [1, 3, 4]);
    const quality = await list(api, { type: "quality" });
    expect(quality.data!.data).toEqual([]);
  });

  it("when filtering by is_production, then true, false and omitted each list their sets", async () => {
    const { api } = await server.newOrg();
    const prod = await ingestMany(api, 2, { is_production: true });
    const nonProd = await ingestMany(api, 3, { is_production: false });

    await expectWalksAgree(pager(api, { is_production: "true" }), ids(prod), [1, 2]);
    await expectWalksAgree(pager(api, { is_production: "false" }), ids(nonProd), [1, 2]);
    const both = await list(api);
    expect(ids(both.data!.data)).toEqual([...ids(nonProd), ...ids(prod)]);
  });

  it("when a set is deleted, then it is hidden by default, listed with is_deleted=true, and hidden with is_deleted=false", async () => {
    const { api } = await server.newOrg();
    const [newest, middle, oldest] = await ingestMany(api, 3);
    await markDeleted(middle!.id);

    const byDefault = await list(api, { include_total: "true" });
    const live = await list(api, { is_deleted: "false" });
    const deleted = await list(api, { is_deleted: "true", include_total: "true" });

    expect(ids(byDefault.data!.data)).toEqual([newest!.id, oldest!.id]);
    expect(byDefault.data!.total_count).toBe(2);
    expect(ids(live.data!.data)).toEqual([newest!.id, oldest!.id]);
    expect(deleted.data!.data).toEqual([{ ...middle, is_deleted: true, updated_at: expect.any(String) }]);
    expect(deleted.data!.total_count).toBe(1);
  });

  it("when ids are given, then exactly those sets are listed in list order, unknown, foreign and deleted ids absent", async () => {
    const { api } = await server.newOrg();
    const other = await server.newOrg();
    const foreign = await ingestQuestionSet(other.api);
    const [a, b, c, d] = await ingestMany(api, 4);
    await markDeleted(d!.id);

    const { data } = await list(api, { id: [c!.id, a!.id, unknownId(), foreign.id, d!.id], include_total: "true" });
    const single = await list(api, { id: [b!.id] });
    const deleted = await list(api, { id: [d!.id, a!.id], is_deleted: "true" });

    expect(ids(data!.data)).toEqual([a!.id, c!.id]);
    expect(data!.total_count).toBe(2);
    expect(ids(single.data!.data)).toEqual([b!.id]);
    expect(ids(deleted.data!.data)).toEqual([d!.id]);
  });

  it("when a batch-get asks for more ids than the limit, then its pages walk like any list", async () => {
    const { api } = await server.newOrg();
    const sets = await ingestMany(api, 6);
    const wanted = sets.filter((_, i) => i !== 2);

    await expectWalksAgree(pager(api, { id: ids(wanted) }), ids(wanted), [1, 2, 5]);
  });

  it("when 100 ids are given, then they are accepted", async () => {
    const { api } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    const many = [set.id, ...Array.from({ length: 99 }, unknownId)];

    const { data, response } = await list(api, { id: many });

    expect(response.status).toBe(200);
    expect(ids(data!.data)).toEqual([set.id]);
  });

  it("when 101 ids are given, then 400 names id", async () => {
    const { api } = await server.newOrg();
    const many = Array.from({ length: 101 }, unknownId);

    problemOf(await list(api, { id: many }), { status: 400, code: "VALIDATION_ERROR", name: "id", location: "query" });
  });

  it("when the cursor set no longer matches the filters, then its position still bounds the page", async () => {
    const { api } = await server.newOrg();
    const e = await ingestQuestionSet(api, { type: "coding" });
    const d = await ingestQuestionSet(api, { type: "compliance" });
    const c = await ingestQuestionSet(api, { type: "coding" });
    const b = await ingestQuestionSet(api, { type: "compliance" });
    const a = await ingestQuestionSet(api, { type: "coding" });
    // list order: a b c d e; b and d are not coding, c becomes deleted
    await markDeleted(c.id);

    const after = await list(api, { type: "coding", starting_after: b.id });
    const before = await list(api, { type: "coding", ending_before: d.id });
    const afterDeleted = await list(api, { starting_after: c.id });

    expect(ids(after.data!.data)).toEqual([e.id]);
    expect(ids(before.data!.data)).toEqual([a.id]);
    expect(ids(afterDeleted.data!.data)).toEqual([d.id, e.id]);
  });

});
