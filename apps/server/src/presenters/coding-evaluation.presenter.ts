import type { CodingEvaluation as ApiCodingEvaluation } from "@audit-review/api-types/internal";
import type { CodingEvaluation } from "../generated/prisma/client.js";
import { emEvaluationOf, icdEvaluationOf } from "../lib/stored-json.js";
import { CODING_EVALUATION_STATUSES, stored } from "../lib/stored-values.js";
import { iso } from "../lib/time.js";

/**
 * A stored evaluation. The embedded findings are stored in their API shape (ids assigned at
 * ingestion). List pages read `display_date` already as YYYY-MM-DD and the timestamps already
 * as RFC 3339 text (repos/coding-evaluations.repo.ts); other reads hand over Dates.
 */
type EvaluationRow = Omit<CodingEvaluation, "display_date" | "created_at" | "updated_at"> & {
  display_date: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
};

const instant = (value: Date | string): string => (typeof value === "string" ? value : iso(value));

export function presentCodingEvaluation(e: EvaluationRow): ApiCodingEvaluation {
  return {
    id: e.id,
    object: "coding_evaluation",
    org_id: e.org_id,
    audit_id: e.audit_id,
    status: stored(CODING_EVALUATION_STATUSES, e.status),
    processed: e.processed,
    needs_em_eval: e.needs_em_eval,
    em_eval_created: e.em_eval_created,
    needs_icd_eval: e.needs_icd_eval,
    icd_eval_created: e.icd_eval_created,
    marked_reviewed: e.marked_reviewed,
    reviewed_by: e.reviewed_by,
    archived: e.archived,
    redacted: e.redacted,
    cold: e.cold,
    display_date: e.display_date instanceof Date ? e.display_date.toISOString().slice(0, 10) : e.display_date,
    em_evaluation: emEvaluationOf(e.em_evaluation),
    icd_evaluation: icdEvaluationOf(e.icd_evaluation),
    created_at: instant(e.created_at),
    updated_at: instant(e.updated_at),
  };
}
