import type { CodingEvaluation as ApiCodingEvaluation, EmEvaluation, IcdEvaluation } from "@audit-review/api-types/internal";
import type { CodingEvaluation } from "../generated/prisma/client.js";
import { iso } from "../lib/time.js";

/** The embedded findings are stored in their API shape (ids assigned at ingestion). */
export function presentCodingEvaluation(e: CodingEvaluation): ApiCodingEvaluation {
  return {
    id: e.id,
    object: "coding_evaluation",
    org_id: e.org_id,
    audit_id: e.audit_id,
    status: e.status as ApiCodingEvaluation["status"],
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
    display_date: e.display_date ? e.display_date.toISOString().slice(0, 10) : null,
    em_evaluation: (e.em_evaluation ?? null) as EmEvaluation | null,
    icd_evaluation: (e.icd_evaluation ?? null) as IcdEvaluation | null,
    created_at: iso(e.created_at),
    updated_at: iso(e.updated_at),
  };
}
