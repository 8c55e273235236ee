// The JSON columns stored in their API shape (written by the services from validated bodies).
// These guards check the discriminating fields once when a row is read, instead of asserting.
import type { EmEvaluation, IcdEvaluation, Threshold } from "@audit-review/api-types/internal";
import { isRecord } from "./narrow.js";

export const isEmEvaluation = (value: unknown): value is NonNullable<EmEvaluation> => isRecord(value) && value.object === "em_evaluation";

export const isIcdEvaluation = (value: unknown): value is NonNullable<IcdEvaluation> => isRecord(value) && value.object === "icd_evaluation";

const isThreshold = (value: unknown): value is Threshold =>
  isRecord(value) && typeof value.label === "string" && typeof value.min_score === "number";

export const isThresholds = (value: unknown): value is Threshold[] => Array.isArray(value) && value.every(isThreshold);

/** The stored document, or null when the column is NULL (or, impossibly, of another shape). */
export const emEvaluationOf = (value: unknown): EmEvaluation | null => (isEmEvaluation(value) ? value : null);
export const icdEvaluationOf = (value: unknown): IcdEvaluation | null => (isIcdEvaluation(value) ? value : null);
