import { describe, expect, it } from "vitest";
import { buildPayload, serializePayload, type PayloadEvent, type PayloadSettings } from "../../src/delivery/payload.js";

const Q1 = "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f71";
const Q2 = "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f72";
const Q3 = "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f73";
const Q4 = "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f74";

const event: PayloadEvent = {
  type: "audit.completed",
  audit_id: "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f60",
  question_set_id: "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f61",
  document_id: "doc-8841",
  result: "failed",
  raw_result: "FAIL (72.5%)",
  occurred_at: new Date("2026-11-21T09:30:00.123Z"),
  is_test: false,
  data: null,
  responses: [
    { question_id: Q1, query: "Chief complaint documented?", answer: "No", context: "HPI empty.", passed: false, informational: false },
    { question_id: Q2, query: "Vitals recorded?", answer: "Yes", context: null, passed: true, informational: false },
    { question_id: Q3, query: "Which clinic?", answer: "North", context: null, passed: null, informational: true },
    { question_id: Q4, query: "Allergies listed?", answer: null, context: "not found", passed: false, informational: false },
  ],
};

const ALL_FIELDS = ["data.documentId", "data.result", "responses", "responses.query", "responses.answer", "responses.context"];
const defaults: PayloadSettings = { fields: ALL_FIELDS, result_format: "normalized", responses_filter: "all", include_informational: false };

describe("buildPayload (standard_v1)", () => {
  it("When every field is selected, Then the body has the full shape with informational questions left out", () => {
    expect(buildPayload(event, defaults)).toEqual({
      type: "audit.completed",
      timestamp: "2026-11-21T09:30:00.123Z",
      isTest: false,
      data: { auditId: event.audit_id, questionSetId: event.question_set_id, documentId: "doc-8841", result: "failed" },
      responses: [
        { questionId: Q1, query: "Chief complaint documented?", answer: "No", context: "HPI empty." },
        { questionId: Q2, query: "Vitals recorded?", answer: "Yes", context: null },
        { questionId: Q4, query: "Allergies listed?", answer: null, context: "not found" },
      ],
    });
  });

  it("When no optional field is selected, Then only type, timestamp, isTest, auditId and questionSetId remain", () => {
    expect(buildPayload(event, { ...defaults, fields: [] })).toEqual({
      type: "audit.completed",
      timestamp: "2026-11-21T09:30:00.123Z",
      isTest: false,
      data: { auditId: event.audit_id, questionSetId: event.question_set_id },
    });
  });

  it("When the event is a test event, Then the body says so whatever fields the endpoint selected", () => {
    for (const fields of [[], ALL_FIELDS]) expect(buildPayload({ ...event, is_test: true }, { ...defaults, fields }).isTest).toBe(true);
  });

  it("When responses is selected without item fields, Then each item carries only its questionId", () => {
    const body = buildPayload(event, { ...defaults, fields: ["responses"] });
    expect(body.responses).toEqual([{ questionId: Q1 }, { questionId: Q2 }, { questionId: Q4 }]);
    expect(body.data).toEqual({ auditId: event.audit_id, questionSetId: event.question_set_id });
  });

  it("When some item fields are selected, Then exactly those appear next to questionId", () => {
    const body = buildPayload(event, { ...defaults, fields: ["data.result", "responses", "responses.answer"] });
    expect(body.responses![0]).toEqual({ questionId: Q1, answer: "No" });
    expect(Object.keys(body.data)).toEqual(["auditId", "questionSetId", "result"]);
  });

  it("When result_format is raw, Then data.result is the raw result string, or the normalized one when none was sent", () => {
    expect(buildPayload(event, { ...defaults, result_format: "raw" }).data.result).toBe("FAIL (72.5%)");
    expect(buildPayload({ ...event, raw_result: null }, { ...defaults, result_format: "raw" }).data.result).toBe("failed");
  });

  it("When responses_filter is failed, Then only answers with passed=false are sent", () => {
    const body = buildPayload(event, { ...defaults, responses_filter: "failed" });
    expect(body.responses!.map((r) => r.questionId)).toEqual([Q1, Q4]);
  });

  it("When informational questions are included, Then they appear (but never under the failed filter: they are not scored)", () => {
    expect(buildPayload(event, { ...defaults, include_informational: true }).responses!.map((r) => r.questionId)).toEqual([Q1, Q2, Q3, Q4]);
    expect(
      buildPayload(event, { ...defaults, include_informational: true, responses_filter: "failed" }).responses!.map((r) => r.questionId),
    ).toEqual([Q1, Q4]);
  });

  it("When the document id is null and selected, Then it is sent as null", () => {
    expect(buildPayload({ ...event, document_id: null }, defaults).data).toHaveProperty("documentId", null);
  });

  it("When serialized, Then the string is the JSON of the built body (the exact bytes that are signed)", () => {
    expect(JSON.parse(serializePayload(event, defaults))).toEqual(buildPayload(event, defaults));
  });
});
