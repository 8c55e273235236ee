import type {
  EmEvaluation,
  IcdEvaluation,
  IngestCodingEvaluationRequest,
  IngestEmEvaluationInput,
  IngestEmFindingInput,
  IngestIcdEvaluationInput,
} from "@audit-review/api-types/internal";
import type { AuthContext } from "../auth/context.js";
import { newId } from "../lib/ids.js";
import { emEvaluationOf, icdEvaluationOf } from "../lib/stored-json.js";
import type { PageRequest } from "../lib/page.js";
import type { CodingEvaluationFilters, CodingEvaluationsRepo, EvaluationFields } from "../repos/coding-evaluations.repo.js";
import type { CodingEvaluation } from "../generated/prisma/client.js";

export type { CodingEvaluationFilters } from "../repos/coding-evaluations.repo.js";

/**
 * Hands out the stored id of an equal item, so a replacement that repeats a finding keeps its id
 * (and an unchanged evaluation stays byte-for-byte unchanged); new items get new ids.
 */
function idsFrom<T extends { id: string }>(stored: readonly T[] | undefined, key: (item: Omit<T, "id">) => string) {
  const free = new Map<string, string[]>();
  for (const item of stored ?? []) {
    const k = key(item);
    free.set(k, [...(free.get(k) ?? []), item.id]);
  }
  return (item: Omit<T, "id">): string => free.get(key(item))?.shift() ?? newId();
}

type EmFinding = NonNullable<EmEvaluation>["problems"][number];
type IcdCriterion = NonNullable<IcdEvaluation>["icd_codes"][number]["criteria"][number];

/** Findings are stored in their API shape, so a list page is a plain read with no joins. */
function emEvaluation(input: NonNullable<IngestEmEvaluationInput>, stored: EmEvaluation | null): EmEvaluation {
  const findings = (list: IngestEmFindingInput[] | undefined, before: EmFinding[] | undefined) => {
    const idFor = idsFrom(before, (f) => JSON.stringify([f.category, f.description]));
    return (list ?? []).map((f) => ({ id: idFor(f), category: f.category, description: f.description }));
  };
  return {
    id: stored?.id ?? newId(),
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
    problems: findings(input.problems, stored?.problems),
    data: findings(input.data, stored?.data),
    risk: findings(input.risk, stored?.risk),
  };
}

function icdEvaluation(input: NonNullable<IngestIcdEvaluationInput>, stored: IcdEvaluation | null): IcdEvaluation {
  const idFor = idsFrom<IcdCriterion & { code: string }>(
    stored?.icd_codes.flatMap((c) => c.criteria.map((k) => ({ ...k, code: c.icd_code }))),
    (k) => JSON.stringify([k.code, k.criteria_name, k.criteria_context, k.is_criteria_met]),
  );
  return {
    id: stored?.id ?? newId(),
    object: "icd_evaluation",
    score: input.score ?? null,
    flags: input.flags ?? [],
    hcc_model_name: input.hcc_model_name ?? null,
    icd_codes: (input.icd_codes ?? []).map((c) => ({
      icd_code: c.icd_code,
      hcc_code: c.hcc_code ?? null,
      criteria: (c.criteria ?? []).map((k) => ({ id: idFor({ ...k, code: c.icd_code }), ...k })),
    })),
  };
}

/** The whole new state of an evaluation from a body (omitted fields take their defaults). */
function evaluationFields(body: IngestCodingEvaluationRequest, stored: CodingEvaluation | null): EvaluationFields {
  const em = body.em_evaluation ? emEvaluation(body.em_evaluation, emEvaluationOf(stored?.em_evaluation)) : null;
  const icd = body.icd_evaluation ? icdEvaluation(body.icd_evaluation, icdEvaluationOf(stored?.icd_evaluation)) : null;
  return {
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
    em_evaluation: em,
    icd_evaluation: icd,
  };
}

/** `now`: the one clock (clock/), which stamps what is stored. */
export function codingEvaluationsService(repo: CodingEvaluationsRepo, now: () => Date) {
  const upsert = (auth: AuthContext, id: string, body: IngestCodingEvaluationRequest) =>
    repo.upsert(auth.orgId, id, (stored) => evaluationFields(body, stored), now());

  return {
    listCodingEvaluations(auth: AuthContext, filters: CodingEvaluationFilters, page: PageRequest) {
      return repo.list(auth.orgId, filters, page);
    },

    /** POST: the server chooses the id. */
    async ingestCodingEvaluation(auth: AuthContext, body: IngestCodingEvaluationRequest) {
      return (await upsert(auth, newId(), body)).evaluation;
    },

    upsertCodingEvaluation: upsert,
  };
}

export type CodingEvaluationsService = ReturnType<typeof codingEvaluationsService>;
