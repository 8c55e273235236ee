import type { Question, QuestionSet, Threshold } from "@audit-review/api-types/internal";
import type { QuestionSetRow } from "../repos/question-sets.repo.js";
import { iso } from "../lib/time.js";

type QuestionRow = QuestionSetRow["questions"][number];

export function presentQuestion(q: QuestionRow): Question {
  return {
    id: q.id,
    object: "question",
    query: q.query,
    question_type: q.question_type as Question["question_type"],
    severity: q.severity as Question["severity"],
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
    type: s.type as QuestionSet["type"],
    is_production: s.is_production,
    is_deleted: s.is_deleted,
    allow_doc_upload: s.allow_doc_upload,
    thresholds: s.thresholds as unknown as Threshold[],
    questions: s.questions.map(presentQuestion),
    created_at: iso(s.created_at),
    updated_at: iso(s.updated_at),
  };
}
