// The HTTP side of every list: turns the contract's query strings into typed values (a page
// request, booleans, id lists, instants) and wraps a page in the list envelope. Services only
// ever see the typed values.
import type { Response } from "express";
import { ValidationError } from "../lib/errors.js";
import { exclusiveBound } from "../lib/instant.js";
import type { Page, PageRequest } from "../lib/page.js";

export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 100;

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
  const limit = query.limit === undefined ? DEFAULT_LIMIT : Number(query.limit);
  // The contract validator already refused anything else; a limit that reached the database
  // unchecked (Infinity, NaN) would fail there as a 500, so this is a second, cheap guard.
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new ValidationError("query", "limit", `must be an integer from 1 to ${MAX_LIMIT}`);
  return {
    limit,
    startingAfter: query.starting_after,
    endingBefore: query.ending_before,
    includeTotal: query.include_total === "true",
  };
}

/** `"true"`/`"false"` → boolean; omitted → undefined (no filter). */
export function boolFilter(value: "true" | "false" | undefined): boolean | undefined {
  return value === undefined ? undefined : value === "true";
}

/** An exclusive created_at bound from an RFC 3339 query parameter; 400 naming it when malformed. */
export function instantBound(value: string | undefined, name: string, side: "after" | "before"): Date | undefined {
  if (value === undefined) return undefined;
  const bound = exclusiveBound(value, side);
  if (!bound) throw new ValidationError("query", name, "must be an RFC 3339 date-time with an offset, e.g. 2026-11-21T09:30:00.000Z");
  return bound;
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

/**
 * Sends a JSON body the way node:http does it cheapest: the string goes to the socket as it is.
 * `res.json` would copy every body of 1,000 bytes or more into a Buffer first, about a tenth of
 * a large list's CPU. When the contract validator checks responses (tests), it has replaced
 * `res.json` on this response, and the body goes through it.
 */
export function sendJson(res: Response, body: unknown): void {
  if (Object.hasOwn(res, "json")) {
    res.json(body);
    return;
  }
  const text = JSON.stringify(body);
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(text));
  res.end(text);
}

/** A page, each row presented, in the list envelope. */
export function sendList<Row, Item>(res: Response, page: Page<Row>, present: (row: Row) => Item): void {
  sendJson(res, listEnvelope(page.rows.map(present), page.hasMore, page.total));
}
