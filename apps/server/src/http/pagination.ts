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
  writeJson(res, [JSON.stringify(body)]);
}

/**
 * Text per piece of a list page. A page of 100 rows is 50–500 KB; as one string it is allocated
 * among V8's large objects, each in a memory chunk of its own, counted towards the next full
 * collection however short it lives. Pieces below V8's large-object size (128 KB; 32 K
 * characters are at most 64 KB even when two bytes each, plus one row) are allocated young and
 * die young: 0.97–1.03 × the floor's CPU per large page instead of 1.00–1.15 × (bench/NOTES.md).
 */
const PIECE_CHARS = 32 * 1024;

/** A page, each row presented, in the list envelope (the same text `listEnvelope` stringifies to). */
export function sendList<Row, Item>(res: Response, page: Page<Row>, present: (row: Row) => Item): void {
  if (Object.hasOwn(res, "json")) {
    res.json(listEnvelope(page.rows.map(present), page.hasMore, page.total));
    return;
  }
  // the envelope's own text around its rows, from the one place that shapes it
  const envelope = JSON.stringify(listEnvelope([], page.hasMore, page.total));
  const rowsAt = envelope.indexOf("[]") + 1;
  const pieces = [envelope.slice(0, rowsAt)];
  // A piece after the first starts with the comma that separates it from the one before: joined
  // from an empty first element, so that the piece is built as one string rather than a concatenation.
  let rows: string[] = [];
  let length = 0;
  for (const row of page.rows) {
    const text = JSON.stringify(present(row));
    rows.push(text);
    length += text.length;
    if (length >= PIECE_CHARS) {
      pieces.push(rows.join(","));
      rows = [""];
      length = 0;
    }
  }
  if (length > 0) pieces.push(rows.join(","));
  pieces.push(envelope.slice(rowsAt));
  writeJson(res, pieces);
}

/** Writes the pieces as one response with its length; node:http sends them in one write. */
function writeJson(res: Response, pieces: string[]): void {
  let bytes = 0;
  for (const piece of pieces) bytes += Buffer.byteLength(piece);
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", bytes);
  const last = pieces.length - 1;
  for (let i = 0; i < last; i++) res.write(pieces[i]);
  res.end(pieces[last]);
}
