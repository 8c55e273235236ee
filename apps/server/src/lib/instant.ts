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
 * An exclusive bound on millisecond timestamps for an RFC 3339 date-time, or null when the text
 * is not one: `created_at > x` holds exactly when `created_at > floor_ms(x)`, and
 * `created_at < x` exactly when `created_at < ceil_ms(x)`. So digits below the millisecond round
 * outwards, and a leap second (`23:59:60`, which `new Date()` cannot represent) sits between the
 * last millisecond of its minute and the next minute.
 */
export function exclusiveBound(value: string, side: "after" | "before"): Date | null {
  const m = RFC3339.exec(value);
  if (!m) return null;
  const [, y = "", mo = "", d = "", h = "", mi = "", s = "", frac = "", , sign, oh = "", om = ""] = m;
  const offsetMs = sign ? (sign === "-" ? -1 : 1) * (Number(oh) * 60 + Number(om)) * 60_000 : 0;
  const leap = s === "60";
  let t = utc(Number(y), Number(mo), Number(d), Number(h), Number(mi), leap ? 59 : Number(s)) - offsetMs;
  if (leap) t += side === "after" ? 999 : 1000;
  else t += Number(frac.slice(0, 3).padEnd(3, "0")) + (side === "before" && /[1-9]/.test(frac.slice(3)) ? 1 : 0);
  return new Date(Math.max(t, EARLIEST));
}

/** The last instant an RFC 3339 date-time (four-digit years) can name and the API can return. */
const LATEST = utc(9999, 12, 31, 23, 59, 59) + 999;
const FULL_DATE = /^(\d{4})-\d\d-\d\d$/;

/**
 * Why a `date-time` or `date` the schema accepts cannot be stored as the instant or day it names,
 * or undefined when it can. The schema's format check lets through what neither JavaScript nor
 * PostgreSQL represents: a leap second (`23:59:60`), an offset without its colon (`+01`), year
 * 0000 (PostgreSQL has no year 0), and offsets that carry an instant past year 9999, which the
 * API could not write back as a four-digit year.
 */
export function unstorableDate(value: string, format: "date" | "date-time"): string | undefined {
  if (format === "date") {
    const m = FULL_DATE.exec(value);
    return m && m[1] === "0000" ? "must be a date from 0001-01-01 on (there is no year 0000)" : undefined;
  }
  const m = RFC3339.exec(value);
  if (!m) return "must be an RFC 3339 date-time with a colon in its offset, e.g. 2026-11-21T09:30:00.000Z or …+01:00";
  const [, y = "", mo = "", d = "", h = "", mi = "", s = "", , , sign, oh = "", om = ""] = m;
  if (s === "60") return "must not be a leap second (:60): it cannot be stored; send :59.999 or the next minute";
  const offsetMs = sign ? (sign === "-" ? -1 : 1) * (Number(oh) * 60 + Number(om)) * 60_000 : 0;
  const t = utc(Number(y), Number(mo), Number(d), Number(h), Number(mi), Number(s)) - offsetMs;
  if (t < EARLIEST || t > LATEST) return "must lie between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z";
  return undefined;
}
