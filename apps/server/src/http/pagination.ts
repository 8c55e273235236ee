import { ValidationError } from "../lib/errors.js";
import type { PageRequest } from "../repos/keyset.js";

export const DEFAULT_LIMIT = 10;

interface ListQuery {
  limit?: number | string;
  starting_after?: string;
  ending_before?: string;
  include_total?: "true" | "false";
}

/** The validated list query (limits, cursors, booleans are already checked by the contract). */
export function pageRequest(query: ListQuery): PageRequest {
  if (query.starting_after !== undefined && query.ending_before !== undefined) {
    throw new ValidationError("query", "ending_before", "cannot be combined with starting_after");
  }
  return {
    limit: query.limit === undefined ? DEFAULT_LIMIT : Number(query.limit),
    startingAfter: query.starting_after,
    endingBefore: query.ending_before,
    includeTotal: query.include_total === "true",
  };
}

/** `"true"`/`"false"` → boolean; omitted → undefined (no filter). */
export function boolFilter(value: "true" | "false" | undefined): boolean | undefined {
  return value === undefined ? undefined : value === "true";
}

/** Repeated `id` arrives as an array, a single one as a string. */
export function idsFilter(value: string | string[] | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value : [value];
}

export function listEnvelope<T>(data: T[], hasMore: boolean, total: number | undefined) {
  return total === undefined
    ? { object: "list" as const, data, has_more: hasMore }
    : { object: "list" as const, data, has_more: hasMore, total_count: total };
}
