// The JSON columns stored in their API shape (written by the services from validated bodies).
// These guards check the discriminating fields once when a row is read, instead of asserting.
import type { EmEvaluation, IcdEvaluation, Threshold } from "@audit-review/api-types/internal";
import type { Event } from "../generated/prisma/client.js";
import { isRecord } from "./narrow.js";

export const isEmEvaluation = (value: unknown): value is NonNullable<EmEvaluation> => isRecord(value) && value.object === "em_evaluation";

export const isIcdEvaluation = (value: unknown): value is NonNullable<IcdEvaluation> => isRecord(value) && value.object === "icd_evaluation";

const isThreshold = (value: unknown): value is Threshold =>
  isRecord(value) && typeof value.label === "string" && typeof value.min_score === "number";

export const isThresholds = (value: unknown): value is Threshold[] => Array.isArray(value) && value.every(isThreshold);

/** The stored document, or null when the column is NULL (or, impossibly, of another shape). */
export const emEvaluationOf = (value: unknown): EmEvaluation | null => (isEmEvaluation(value) ? value : null);
export const icdEvaluationOf = (value: unknown): IcdEvaluation | null => (isIcdEvaluation(value) ? value : null);

/** What is stored of each answered question of an event: enough to build any endpoint's payload later. */
// A type alias, not an interface: Prisma's JSON input type needs the implicit index signature.
export type StoredResponse = {
  question_id: string;
  query: string;
  answer: string | null;
  context: string | null;
  passed: boolean | null;
  informational: boolean;
};

/** An event row with its responses typed (the column is JSON, written only from validated bodies). */
export type StoredEvent = Omit<Event, "responses"> & { responses: StoredResponse[] };
