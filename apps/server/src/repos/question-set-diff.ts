import type { IngestQuestionSetRequest, ProblemIssue } from "@audit-review/api-types/internal";
import type { Question, QuestionSet } from "../generated/prisma/client.js";
import { newId } from "../lib/ids.js";
import { keysOf } from "../lib/narrow.js";
import { sameValue } from "../lib/same-value.js";

/** The columns of a set a replacement writes (identity and timestamps are not among them). */
export type SetFields = Pick<QuestionSet, "set_name" | "set_code" | "type" | "is_production" | "allow_doc_upload" | "is_deleted"> & {
  thresholds: NonNullable<IngestQuestionSetRequest["thresholds"]>;
};

export type QuestionFields = Pick<Question, "id" | "position" | "query" | "question_type" | "severity" | "remediation" | "is_deleted">;

export type StoredQuestion = QuestionFields & Pick<Question, "question_set_id">;

/** A PUT body is the whole new state: omitted fields take their defaults. */
export function setFieldsOf(body: IngestQuestionSetRequest): SetFields {
  return {
    set_name: body.set_name,
    set_code: body.set_code,
    type: body.type ?? null,
    is_production: body.is_production ?? false,
    allow_doc_upload: body.allow_doc_upload ?? false,
    is_deleted: body.is_deleted ?? false,
    thresholds: body.thresholds ?? [],
  };
}

/** The body's questions in set order; a question without an id gets a new one here. */
export function questionFieldsOf(body: IngestQuestionSetRequest): QuestionFields[] {
  return (body.questions ?? []).map((q, position) => ({
    id: q.id ?? newId(),
    position,
    query: q.query,
    question_type: q.question_type ?? null,
    severity: q.severity ?? null,
    remediation: q.remediation ?? null,
    is_deleted: q.is_deleted ?? false,
  }));
}

export function setChanged(stored: QuestionSet, next: SetFields): boolean {
  return keysOf(next).some((k) => !sameValue(stored[k], next[k]));
}

/** Caller-given ids the set does not own yet: they must not belong to any other set. */
export function unownedIds(body: IngestQuestionSetRequest, stored: readonly StoredQuestion[]): string[] {
  const owned = new Set(stored.map((q) => q.id));
  return (body.questions ?? []).flatMap((q) => (q.id && !owned.has(q.id) ? [q.id] : []));
}

/** Every offending question id at once: duplicates in the body, and ids owned by another set. */
export function questionIdIssues(body: IngestQuestionSetRequest, takenElsewhere: ReadonlySet<string>): ProblemIssue[] {
  const firstIndex = new Map<string, number>();
  const issues: ProblemIssue[] = [];
  (body.questions ?? []).forEach((q, i) => {
    if (!q.id) return;
    const name = `questions.${i}.id`;
    const first = firstIndex.get(q.id);
    if (first !== undefined) issues.push({ location: "body", name, message: `repeats questions.${first}.id` });
    else if (takenElsewhere.has(q.id)) issues.push({ location: "body", name, message: "is a question of another question set" });
    firstIndex.set(q.id, first ?? i);
  });
  return issues;
}

export interface QuestionChanges {
  creates: QuestionFields[];
  updates: QuestionFields[];
}

/**
 * What a replacement does to the stored questions: new ids are created, changed ones updated,
 * and live questions the body leaves out are marked deleted (kept, so their ids stay reserved
 * and past events that name them still resolve).
 */
export function questionChanges(stored: readonly StoredQuestion[], next: readonly QuestionFields[]): QuestionChanges {
  const byId = new Map(stored.map((q) => [q.id, q]));
  const creates: QuestionFields[] = [];
  const updates: QuestionFields[] = [];
  for (const q of next) {
    const old = byId.get(q.id);
    if (!old) creates.push(q);
    else if (keysOf(q).some((k) => old[k] !== q[k])) updates.push(q);
  }
  const kept = new Set(next.map((q) => q.id));
  for (const old of stored) {
    if (!kept.has(old.id) && !old.is_deleted) {
      const { question_set_id: _set, ...fields } = old;
      updates.push({ ...fields, is_deleted: true });
    }
  }
  return { creates, updates };
}
