import { ValidationError } from "../lib/errors.js";
import type { PageRequest } from "../repos/keyset.js";

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

// RFC 3339 §5.6 (T or, as its note allows, a space; offsets with a colon). The contract's
// date-time check also lets `+01` and `+0100` through, which RFC 3339 does not allow.
const RFC3339 = /^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:([Zz])|([+-])(\d\d):(\d\d))$/;

function utc(year: number, month: number, day: number, h = 0, m = 0, s = 0): number {
  const d = new Date(0);
  // Date.UTC would read years 0..99 as 1900..1999
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(h, m, s, 0);
  return d.getTime();
}

/** PostgreSQL has no year 0; nothing is stored before year 1. */
const EARLIEST = utc(1, 1, 1);

/**
 * An exclusive bound on millisecond timestamps for an RFC 3339 date-time: `created_at > x` holds
 * exactly when `created_at > floor_ms(x)`, and `created_at < x` exactly when
 * `created_at < ceil_ms(x)`. So digits below the millisecond round outwards, and a leap second
 * (`23:59:60`, which `new Date()` cannot represent) sits between the last millisecond of its
 * minute and the next minute.
 */
export function instantBound(value: string | undefined, name: string, side: "after" | "before"): Date | undefined {
  if (value === undefined) return undefined;
  const m = RFC3339.exec(value);
  if (!m) throw new ValidationError("query", name, "must be an RFC 3339 date-time with an offset, e.g. 2026-11-21T09:30:00.000Z");
  const [, y, mo, d, h, mi, s, frac = "", , sign, oh, om] = m as unknown as string[];
  const offsetMs = sign ? (sign === "-" ? -1 : 1) * (Number(oh) * 60 + Number(om)) * 60_000 : 0;
  const leap = s === "60";
  let t = utc(Number(y), Number(mo), Number(d), Number(h), Number(mi), leap ? 59 : Number(s)) - offsetMs;
  if (leap) t += side === "after" ? 999 : 1000;
  else t += Number(frac.slice(0, 3).padEnd(3, "0")) + (side === "before" && /[1-9]/.test(frac.slice(3)) ? 1 : 0);
  return new Date(Math.max(t, EARLIEST));
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
