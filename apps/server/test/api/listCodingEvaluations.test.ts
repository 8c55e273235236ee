import { randomUUID } from "node:crypto";
import type { CodingEvaluation, operations } from "@audit-review/api-types/internal";
import { describe, expect, it } from "vitest";
import { evaluationBody, ingestCodingEvaluation, ingestQuestionSet, problemOf, unknownId, useApiServer } from "../harness/factories.js";
import { describeKeysetList, oneAfterAnother, pagerOf } from "../harness/keyset-list.js";
import { expectWalksAgree, ids } from "../harness/pagination.js";
import type { Api } from "../harness/server.js";

type Query = NonNullable<operations["listCodingEvaluations"]["parameters"]["query"]>;

const server = await useApiServer();
const prisma = server.server.db.prisma;

const list = (api: Api, query: Query = {}) => api.GET("/v2/coding_evaluations", { params: { query } });
const pager = (api: Api, filters: Query = {}) => pagerOf((page) => list(api, { ...filters, ...page }));
/** `n` evaluations ingested one after another, newest first (list order). */
const ingestMany = async (api: Api, n: number, overrides: Parameters<typeof ingestCodingEvaluation>[1] = {}): Promise<CodingEvaluation[]> =>
  (await oneAfterAnother(n, () => ingestCodingEvaluation(api, overrides))).reverse();

/** Pins created_at, so bounds can be tested at the millisecond. */
const setCreatedAt = (id: string, iso: string) => prisma.codingEvaluation.update({ where: { id }, data: { created_at: new Date(iso) } });

describeKeysetList<CodingEvaluation>({
  items: "evaluations",
  path: "/v2/coding_evaluations",
  server,
  list,
  createMany: (api, n) => ingestMany(api, n),
  idsOfOtherLists: async (api) => [(await ingestQuestionSet(api)).id],
  badQueries: [
    ["archived=yes", "archived"],
    ["archived=", "archived"],
    ["status=done", "status"],
    ["audit_id=not-a-uuid", "audit_id"],
    ["id=0193a5b2", "id"],
    ["created_after=2026-11-01", "created_after"],
    ["created_after=2026-11-01T00:00:00", "created_after"],
    ["created_before=yesterday", "created_before"],
    ["created_before=2026-13-01T00:00:00Z", "created_before"],
    ["created_before=2026-02-30T00:00:00Z", "created_before"],
    ["created_after=1700000000", "created_after"],
    ["created_after=2026-11-01T00:00:00%2B0100", "created_after"],
    ["created_before=2026-11-01T00:00:00-01", "created_before"],
    ["created_before=2026-11-01T24:00:00Z", "created_before"],
    ["created_before=2026-11-01T12:00:60Z", "created_before"],
    ["is_deleted=true", "is_deleted"],
  ],
});

describe("GET /v2/coding_evaluations", () => {
  it("when timestamps are written with microseconds and another offset, then the list prints the stored milliseconds in UTC (rounded when stored, a carry included)", async () => {
    const { api } = await server.newOrg();
    const evaluation = await ingestCodingEvaluation(api);
    await prisma.$executeRaw`UPDATE coding_evaluations SET created_at = '2026-03-04 07:06:07.891999+02', updated_at = '1999-12-31 23:59:59.9999-01' WHERE id = ${evaluation.id}::uuid`;

    const { data } = await list(api);

    expect(data?.data.map((e) => [e.created_at, e.updated_at])).toEqual([["2026-03-04T05:06:07.892Z", "2000-01-01T01:00:00.000Z"]]);
  });

  it("when an evaluation is ingested with findings, then it is listed with every field and its findings embedded", async () => {
    const { api, orgId } = await server.newOrg();
    const auditId = randomUUID();
    const evaluation = await ingestCodingEvaluation(api, {
      audit_id: auditId,
      status: "completed",
      processed: true,
      marked_reviewed: true,
      reviewed_by: "reviewer@example.org",
      display_date: "2026-11-20",
      em_evaluation: {
        coding_status: "codable",
        score: 87.5,
        flags: ["missing_ros"],
        mdm_level: "moderate",
        submitted_base_code: "99215",
        recommended_base_code: "99214",
        upcoded: true,
        problems: [{ category: "chronic_illness_with_exacerbation", description: "COPD with acute exacerbation" }],
      },
      icd_evaluation: {
        score: 92,
        hcc_model_name: "CMS-HCC V28",
        icd_codes: [{ icd_code: "E11.65", hcc_code: "HCC37", criteria: [{ criteria_name: "MEAT - Monitor", criteria_context: "A1c 8.2%", is_criteria_met: true }] }],
      },
    });

    const { data, response } = await list(api);

    expect(response.status).toBe(200);
    expect(data).toEqual({ object: "list", data: [evaluation], has_more: false });
    expect(evaluation).toMatchObject({
      object: "coding_evaluation",
      org_id: orgId,
      audit_id: auditId,
      status: "completed",
      processed: true,
      em_eval_created: true,
      icd_eval_created: true,
      marked_reviewed: true,
      reviewed_by: "reviewer@example.org",
      display_date: "2026-11-20",
      em_evaluation: {
        id: expect.any(String),
        object: "em_evaluation",
        coding_status: "codable",
        score: 87.5,
        flags: ["missing_ros"],
        mdm_level: "moderate",
        problems_level: null,
        upcoded: true,
        downcoded: null,
        submitted_add_on_codes: [],
        problems: [{ id: expect.any(String), category: "chronic_illness_with_exacerbation", description: "COPD with acute exacerbation" }],
        data: [],
        risk: [],
      },
      icd_evaluation: {
        id: expect.any(String),
        object: "icd_evaluation",
        score: 92,
        flags: [],
        hcc_model_name: "CMS-HCC V28",
        icd_codes: [{ icd_code: "E11.65", hcc_code: "HCC37", criteria: [{ id: expect.any(String), criteria_name: "MEAT - Monitor", criteria_context: "A1c 8.2%", is_criteria_met: true }] }],
      },
    });
  });

  it("when an evaluation's findings are not created yet, then em_evaluation and icd_evaluation are null", async () => {
    const { api } = await server.newOrg();
    await api.POST("/v2/internal/coding_evaluations", { body: evaluationBody({}) });
    await ingestCodingEvaluation(api, { em_evaluation: { coding_status: "uncodable", uncodable_reason: "no note" } });

    const [emOnly, bare] = (await list(api)).data!.data;

    expect(bare).toMatchObject({
      audit_id: null,
      status: "pending",
      processed: false,
      needs_em_eval: true,
      em_eval_created: false,
      needs_icd_eval: true,
      icd_eval_created: false,
      marked_reviewed: false,
      reviewed_by: null,
      archived: false,
      redacted: false,
      cold: false,
      display_date: null,
      em_evaluation: null,
      icd_evaluation: null,
    });
    expect(emOnly).toMatchObject({ em_eval_created: true, icd_eval_created: false, icd_evaluation: null, em_evaluation: { coding_status: "uncodable", uncodable_reason: "no note" } });
  });

  it("when evaluations share a creation instant, then id breaks the tie and walks stay exact", async () => {
    const { api } = await server.newOrg();
    const all = await ingestMany(api, 5);
    for (const e of all) await setCreatedAt(e.id, "2026-03-01T12:00:00.000Z");

    await expectWalksAgree(pager(api), ids(all), [1, 2, 4]);
  });

  it("when include_total is true with the archived filter, then total_count counts only the matching evaluations", async () => {
    const { api } = await server.newOrg();
    const archived = await ingestMany(api, 4, { archived: true });
    await ingestMany(api, 3, { archived: false });

    const page = await list(api, { include_total: "true", archived: "true", limit: 1, starting_after: archived[1]!.id });

    expect(page.data).toMatchObject({ total_count: 4, has_more: true, data: [{ id: archived[2]!.id }] });
  });

  it("when filtering by status, then only evaluations in that status are listed, across pages", async () => {
    const { api } = await server.newOrg();
    const failed: CodingEvaluation[] = [];
    for (let i = 0; i < 3; i++) {
      failed.unshift(await ingestCodingEvaluation(api, { status: "failed" }));
      await ingestCodingEvaluation(api, { status: i % 2 ? "completed" : "processing" });
    }

    await expectWalksAgree(pager(api, { status: "failed" }), ids(failed), [1, 2]);
    expect((await list(api, { status: "pending" })).data!.data).toEqual([]);
  });

  it("when filtering by audit_id, then only that audit's evaluations are listed", async () => {
    const { api } = await server.newOrg();
    const auditId = randomUUID();
    const mine = await ingestMany(api, 3, { audit_id: auditId });
    await ingestMany(api, 2);
    await ingestCodingEvaluation(api, { audit_id: null });

    await expectWalksAgree(pager(api, { audit_id: auditId }), ids(mine), [1, 2]);
    expect((await list(api, { audit_id: randomUUID() })).data!.data).toEqual([]);
  });

  it("when filtering by archived, then true, false and omitted each list their evaluations", async () => {
    const { api } = await server.newOrg();
    const archived = await ingestMany(api, 2, { archived: true });
    const live = await ingestMany(api, 3, { archived: false });

    await expectWalksAgree(pager(api, { archived: "true" }), ids(archived), [1, 2]);
    await expectWalksAgree(pager(api, { archived: "false" }), ids(live), [1, 2]);
    expect(ids((await list(api)).data!.data)).toEqual([...ids(live), ...ids(archived)]);
  });

  it("when created_after and created_before are given, then both bounds are exclusive", async () => {
    const { api } = await server.newOrg();
    const [e3, e2, e1] = await ingestMany(api, 3);
    await setCreatedAt(e1!.id, "2026-01-01T00:00:00.000Z");
    await setCreatedAt(e2!.id, "2026-01-01T00:00:01.000Z");
    await setCreatedAt(e3!.id, "2026-01-01T00:00:02.000Z");

    const after = await list(api, { created_after: "2026-01-01T00:00:00.000Z" });
    const before = await list(api, { created_before: "2026-01-01T00:00:02.000Z" });
    const between = await list(api, { created_after: "2026-01-01T00:00:00.000Z", created_before: "2026-01-01T00:00:02.000Z", include_total: "true" });
    const justBefore = await list(api, { created_after: "2025-12-31T23:59:59.999Z" });

    expect(ids(after.data!.data)).toEqual([e3!.id, e2!.id]);
    expect(ids(before.data!.data)).toEqual([e2!.id, e1!.id]);
    expect(between.data).toMatchObject({ data: [{ id: e2!.id }], total_count: 1 });
    expect(ids(justBefore.data!.data)).toEqual([e3!.id, e2!.id, e1!.id]);
  });

  it("when the bounds carry an offset or more than millisecond precision, then they mean the same instant", async () => {
    const { api } = await server.newOrg();
    const [e2, e1] = await ingestMany(api, 2);
    await setCreatedAt(e1!.id, "2026-01-01T00:00:00.000Z");
    await setCreatedAt(e2!.id, "2026-01-01T00:00:01.000Z");

    const offset = await list(api, { created_after: "2026-01-01T01:00:00.000+01:00" });
    const noFraction = await list(api, { created_before: "2026-01-01T00:00:01Z" });
    // 00:00:01.000 is before 00:00:01.0005: the evaluation must be listed
    const micro = await list(api, { created_before: "2026-01-01T00:00:01.000500Z" });
    const microAfter = await list(api, { created_after: "2026-01-01T00:00:00.000500Z" });

    expect(ids(offset.data!.data)).toEqual([e2!.id]);
    expect(ids(noFraction.data!.data)).toEqual([e1!.id]);
    expect(ids(micro.data!.data)).toEqual([e2!.id, e1!.id]);
    expect(ids(microAfter.data!.data)).toEqual([e2!.id]);
    const lowercase = await list(api, { created_before: "2026-01-01t00:00:01.000z" });
    expect(ids(lowercase.data!.data)).toEqual([e1!.id]);
  });

  it("when a bound is a leap second or at the edge of the calendar, then it is a valid instant, not an error", async () => {
    const { api } = await server.newOrg();
    const [e2, e1] = await ingestMany(api, 2);
    await setCreatedAt(e1!.id, "2016-12-31T23:59:59.500Z");
    await setCreatedAt(e2!.id, "2017-01-01T00:00:00.000Z");

    const afterLeap = await list(api, { created_after: "2016-12-31T23:59:60Z" });
    const beforeLeap = await list(api, { created_before: "2016-12-31T23:59:60Z" });
    const yearZero = await list(api, { created_after: "0000-01-01T00:00:00Z" });
    const farFuture = await list(api, { created_before: "9999-12-31T23:59:59.999Z" });

    expect(afterLeap.response.status).toBe(200);
    expect(ids(afterLeap.data!.data)).toEqual([e2!.id]);
    expect(ids(beforeLeap.data!.data)).toEqual([e1!.id]);
    expect(ids(yearZero.data!.data)).toEqual([e2!.id, e1!.id]);
    expect(ids(farFuture.data!.data)).toEqual([e2!.id, e1!.id]);
  });

  it("when ids are given, then exactly those evaluations are listed, unknown and foreign ids absent", async () => {
    const { api } = await server.newOrg();
    const other = await server.newOrg();
    const foreign = await ingestCodingEvaluation(other.api);
    const [a, , c] = await ingestMany(api, 3);

    const { data } = await list(api, { id: [c!.id, unknownId(), foreign.id, a!.id], include_total: "true" });

    expect(ids(data!.data)).toEqual([a!.id, c!.id]);
    expect(data!.total_count).toBe(2);
    problemOf(await list(api, { id: Array.from({ length: 101 }, unknownId) }), { status: 400, code: "VALIDATION_ERROR", name: "id", location: "query" });
    expect((await list(api, { id: Array.from({ length: 100 }, unknownId) })).response.status).toBe(200);
  });

  it("when the cursor evaluation no longer matches the filters, then its position still bounds the page", async () => {
    const { api } = await server.newOrg();
    const d = await ingestCodingEvaluation(api, { status: "failed" });
    const c = await ingestCodingEvaluation(api, { status: "completed" });
    const b = await ingestCodingEvaluation(api, { status: "failed" });
    const a = await ingestCodingEvaluation(api, { status: "completed" });

    const after = await list(api, { status: "failed", starting_after: c.id });
    const before = await list(api, { status: "failed", ending_before: a.id });
    const outOfRange = await list(api, { created_before: "2000-01-01T00:00:00Z", ending_before: d.id });

    expect(ids(after.data!.data)).toEqual([d.id]);
    expect(before.data).toMatchObject({ data: [], has_more: false });
    expect(ids((await list(api, { status: "failed", ending_before: c.id })).data!.data)).toEqual([b.id]);
    expect(outOfRange.data!.data).toEqual([]);
  });

});
