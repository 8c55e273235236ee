import type { IngestCodingEvaluationRequest, IngestQuestionSetRequest } from "@audit-review/api-types/internal";

/**
 * Realistic demo data, deterministic for a given index so benchmarks and demos are repeatable.
 * Shaped as ingestion requests: it goes through the same use cases as the audit pipeline.
 */
const SET_TYPES = ["clinical_documentation", "coding", "compliance", "quality", null] as const;
const QUESTIONS = [
  ["Is the patient's chief complaint documented?", "yes_no", "high", "Document the chief complaint in the HPI."],
  ["Are current medications reconciled?", "yes_no", "medium", "Reconcile the medication list at every visit."],
  ["Which history elements are present?", "multiple_choice", "low", null],
  ["Is the assessment linked to each diagnosis?", "yes_no", "critical", "Link each diagnosis to its assessment and plan."],
  ["Reviewer notes", "informational", null, null],
  ["Is the exam documented per system?", "yes_no", "medium", "Document findings per organ system."],
  ["Is time documented for time-based billing?", "yes_no", "high", "Record total time on the date of service."],
  ["Describe any documentation gaps.", "free_text", "low", null],
] as const;
const EVAL_STATUSES = ["completed", "completed", "completed", "processing", "pending", "failed"] as const;
const LEVELS = ["straightforward", "low", "moderate", "high"] as const;
const CPT = ["99212", "99213", "99214", "99215"] as const;
const ICD = [
  ["E11.65", "HCC37"],
  ["I10", null],
  ["J44.1", "HCC280"],
  ["N18.4", "HCC327"],
  ["F32.1", "HCC155"],
] as const;

const pick = <T>(list: readonly T[], i: number): T => list[i % list.length]!;

export function sampleQuestionSet(i: number, questionsPerSet = 8): IngestQuestionSetRequest {
  return {
    set_name: `${pick(["ED", "Primary care", "Cardiology", "Oncology", "Pediatrics"], i)} documentation review #${i + 1}`,
    set_code: `QS-${String(i + 1).padStart(5, "0")}`,
    type: pick(SET_TYPES, i),
    is_production: i % 3 !== 0,
    allow_doc_upload: i % 2 === 0,
    thresholds: [
      { label: "pass", min_score: 80 },
      { label: "needs_review", min_score: 60 },
    ],
    // some retired data, so the is_deleted filter and the omitted deleted questions show in a demo
    is_deleted: i % 6 === 5,
    questions: Array.from({ length: questionsPerSet }, (_, q) => {
      const [query, question_type, severity, remediation] = pick(QUESTIONS, q + i);
      return { query, question_type, severity, remediation, is_deleted: i % 4 === 3 && q > 0 && q === questionsPerSet - 1 };
    }),
  };
}

export function sampleCodingEvaluation(i: number): IngestCodingEvaluationRequest {
  const status = pick(EVAL_STATUSES, i);
  const complete = status === "completed";
  const submitted = pick(CPT, i);
  const recommended = pick(CPT, i + (i % 4 === 0 ? 1 : 0));
  return {
    audit_id: null,
    status,
    processed: complete,
    needs_em_eval: true,
    needs_icd_eval: true,
    marked_reviewed: complete && i % 5 === 0,
    reviewed_by: complete && i % 5 === 0 ? "reviewer@example-clinic.org" : null,
    archived: i % 11 === 0,
    redacted: i % 13 === 0,
    cold: false,
    display_date: new Date(Date.UTC(2026, 10, 1 + (i % 20))).toISOString().slice(0, 10),
    em_evaluation: complete
      ? {
          coding_status: "codable",
          score: 60 + (i % 40),
          flags: i % 4 === 0 ? ["upcoding_risk"] : [],
          base_code_aligned: submitted === recommended,
          add_on_codes_aligned: true,
          problems_level: pick(LEVELS, i),
          data_level: pick(LEVELS, i + 1),
          risk_level: pick(LEVELS, i + 2),
          mdm_level: pick(LEVELS, i),
          time_based: i % 7 === 0,
          encounter_time_minutes: 15 + (i % 30),
          upcoded: submitted > recommended,
          downcoded: submitted < recommended,
          submitted_base_code: submitted,
          recommended_base_code: recommended,
          submitted_add_on_codes: [],
          recommended_add_on_codes: [],
          problems: [{ category: "chronic_illness_with_exacerbation", description: "COPD with acute exacerbation" }],
          data: [{ category: "review_of_external_notes", description: "Reviewed cardiology consult note" }],
          risk: [{ category: "prescription_drug_management", description: "Adjusted inhaled corticosteroid dose" }],
        }
      : null,
    icd_evaluation: complete
      ? {
          score: 70 + (i % 30),
          flags: [],
          hcc_model_name: "CMS-HCC V28",
          icd_codes: [pick(ICD, i), pick(ICD, i + 2)].map(([icd_code, hcc_code]) => ({
            icd_code,
            hcc_code,
            criteria: [
              { criteria_name: "MEAT - Monitor", criteria_context: "Condition reviewed at this visit.", is_criteria_met: true },
              { criteria_name: "MEAT - Treat", criteria_context: "Treatment plan documented.", is_criteria_met: i % 3 !== 0 },
            ],
          })),
        }
      : null,
  };
}
