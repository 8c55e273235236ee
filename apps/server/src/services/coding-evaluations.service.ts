import type {
  EmEvaluation,
  IcdEvaluation,
  IngestCodingEvaluationRequest,
  IngestEmEvaluationInput,
  IngestIcdEvaluationInput,
  operations,
} from "@audit-review/api-types/internal";
import type { AuthContext } from "../http/context.js";
import { boolFilter, idsFilter, instantBound, pageRequest } from "../http/pagination.js";
import { newId } from "../lib/ids.js";
import type { CodingEvaluationsRepo } from "../repos/coding-evaluations.repo.js";

type ListQuery = NonNullable<operations["listCodingEvaluations"]["parameters"]["query"]>;

/** Findings are stored in their API shape, so a list page is a plain read with no joins. */
function emEvaluation(input: NonNullable<IngestEmEvaluationInput>): EmEvaluation {
  const finding = (f: { category: string; description: string }) => ({ id: newId(), category: f.category, description: f.description });
  return {
    id: newId(),
    object: "em_evaluation",
    coding_status: input.coding_status,
    uncodable_reason: input.uncodable_reason ?? null,
    score: input.score ?? null,
    flags: input.flags ?? [],
    base_code_aligned: input.base_code_aligned ?? null,
    add_on_codes_aligned: input.add_on_codes_aligned ?? null,
    problems_level: input.problems_level ?? null,
    data_level: input.data_level ?? null,
    risk_level: input.risk_level ?? null,
    mdm_level: input.mdm_level ?? null,
    time_based: input.time_based ?? null,
    encounter_time_minutes: input.encounter_time_minutes ?? null,
    upcoded: input.upcoded ?? null,
    downcoded: input.downcoded ?? null,
    submitted_base_code: input.submitted_base_code ?? null,
    recommended_base_code: input.recommended_base_code ?? null,
    submitted_add_on_codes: input.submitted_add_on_codes ?? [],
    recommended_add_on_codes: input.recommended_add_on_codes ?? [],
    problems: (input.problems ?? []).map(finding),
    data: (input.data ?? []).map(finding),
    risk: (input.risk ?? []).map(finding),
  };
}

function icdEvaluation(input: NonNullable<IngestIcdEvaluationInput>): IcdEvaluation {
  return {
    id: newId(),
    object: "icd_evaluation",
    score: input.score ?? null,
    flags: input.flags ?? [],
    hcc_model_name: input.hcc_model_name ?? null,
    icd_codes: (input.icd_codes ?? []).map((c) => ({
      icd_code: c.icd_code,
      hcc_code: c.hcc_code ?? null,
      criteria: (c.criteria ?? []).map((k) => ({ id: newId(), ...k })),
    })),
  };
}

export function codingEvaluationsService(repo: CodingEvaluationsRepo) {
  return {
    listCodingEvaluations(auth: AuthContext, query: ListQuery) {
      return repo.list(
        auth.orgId,
        {
          ids: idsFilter(query.id),
          status: query.status,
          auditId: query.audit_id,
          archived: boolFilter(query.archived),
          createdAfter: instantBound(query.created_after, "created_after", "after"),
          createdBefore: instantBound(query.created_before, "created_before", "before"),
        },
        pageRequest(query),
      );
    },

    ingestCodingEvaluation(auth: AuthContext, body: IngestCodingEvaluationRequest) {
      const now = new Date();
      const em = body.em_evaluation ? emEvaluation(body.em_evaluation) : null;
      const icd = body.icd_evaluation ? icdEvaluation(body.icd_evaluation) : null;
      return repo.create({
        id: newId(),
        org_id: auth.orgId,
        audit_id: body.audit_id ?? null,
        status: body.status ?? "pending",
        processed: body.processed ?? false,
        needs_em_eval: body.needs_em_eval ?? true,
        em_eval_created: em !== null,
        needs_icd_eval: body.needs_icd_eval ?? true,
        icd_eval_created: icd !== null,
        marked_reviewed: body.marked_reviewed ?? false,
        reviewed_by: body.reviewed_by ?? null,
        archived: body.archived ?? false,
        redacted: body.redacted ?? false,
        cold: body.cold ?? false,
        display_date: body.display_date ? new Date(`${body.display_date}T00:00:00.000Z`) : null,
        ...(em && { em_evaluation: em }),
        ...(icd && { icd_evaluation: icd }),
        created_at: now,
        updated_at: now,
      });
    },
  };
}

export type CodingEvaluationsService = ReturnType<typeof codingEvaluationsService>;
