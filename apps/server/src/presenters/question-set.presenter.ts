import type { Question, QuestionSet } from "@audit-review/api-types/internal";
import type { Question as QuestionModel, QuestionSet as QuestionSetModel } from "../generated/prisma/client.js";
import { isThresholds } from "../lib/stored-json.js";
import { QUESTION_SET_TYPES, QUESTION_TYPES, SEVERITIES, storedOrNull } from "../lib/stored-values.js";
import { iso } from "../lib/time.js";

type QuestionRow = Pick<QuestionModel, "id" | "query" | "question_type" | "severity" | "remediation">;

/** A stored set with its live questions in order. */
type QuestionSetRow = QuestionSetModel & { questions: QuestionRow[] };

export function presentQuestion(q: QuestionRow): Question {
  return {
    id: q.id,
    object: "question",
    query: q.query,
    question_type: storedOrNull(QUESTION_TYPES, q.question_type),
    severity: storedOrNull(SEVERITIES, q.severity),
    remediation: q.remediation,
  };
}

export function presentQuestionSet(s: QuestionSetRow): QuestionSet {
  return {
    id: s.id,
    object: "question_set",
    org_id: s.org_id,
    set_name: s.set_name,
    set_code: s.set_code,
    type: storedOrNull(QUESTION_SET_TYPES, s.type),
    is_production: s.is_production,
    is_deleted: s.is_deleted,
    allow_doc_upload: s.allow_doc_upload,
    thresholds: isThresholds(s.thresholds) ? s.thresholds : [],
    questions: s.questions.map(presentQuestion),
    created_at: iso(s.created_at),
    updated_at: iso(s.updated_at),
  };
}
