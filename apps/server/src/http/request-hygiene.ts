import type { ProblemIssue } from "@audit-review/api-types/internal";
import type { ContractParameter, OperationMatch } from "../contract/contract.js";
import { unstorableDate } from "../lib/instant.js";
import { isRecord } from "../lib/narrow.js";
import { unstorable, unstorableStrings } from "./storable-strings.js";

/**
 * Checks of the raw request that the schema validator cannot make, because it only sees values
 * after they were decoded and coerced: how a value was spelled (integers in plain decimal digits,
 * reserved characters percent-encoded, valid UTF-8 percent-encoding), parameter names exactly as
 * the contract spells them (`id[]` is not `id`), and the one string rule. Everything comes from
 * the contract, so a new operation or parameter is covered without code. Dates the schema's
 * format check accepts but that cannot be stored are refused here too, naming the field.
 */

// RFC 3986 gen-delims and sub-delims: the validator's "must be url encoded" set. A raw `+` is the
// dangerous one: form decoding turns it into a space (`+01:00` would silently become ` 01:00`).
const RESERVED = /[:/?#[\]@!$&'()*+,;=]/;
const DECIMAL_INTEGER = /^-?(?:0|[1-9][0-9]*)$/;

/** Every problem of the raw request; `clean` is the query string without the offending pairs. */
export function checkRequest(match: OperationMatch | undefined, rawQuery: string, body: unknown): { issues: ProblemIssue[]; clean: string } {
  const issues: ProblemIssue[] = [];
  if (!match) return { issues, clean: rawQuery };
  const op = match.operation;
  for (const [name, raw] of match.pathValues) {
    const spec = op.parameters.find((p) => p.in === "path" && p.name === name);
    const why = valueProblem(raw, spec, false);
    if (why) issues.push({ location: "path", name, message: why });
  }

  const kept: string[] = [];
  for (const pair of rawQuery.split("&")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    const rawKey = eq < 0 ? pair : pair.slice(0, eq);
    const rawValue = eq < 0 ? "" : pair.slice(eq + 1);
    const key = decode(rawKey, true);
    const spec = key === undefined ? undefined : op.parameters.find((p) => p.in === "query" && p.name === key);
    let why: string | undefined;
    if (key === undefined) why = "is not valid percent-encoded UTF-8";
    else if (unstorable(key)) why = `a parameter name ${unstorable(key)}`;
    else if (!spec) why = "is not a parameter of this operation";
    else why = valueProblem(rawValue, spec, true);
    if (why) issues.push({ location: "query", name: key !== undefined && key !== "" && !unstorable(key) ? key.slice(0, 100) : printable(rawKey), message: why });
    // allowReserved: the value is sent as-is, so a raw `+` is a plus sign (`+01:00`), not the
    // space that form decoding would make of it; a space must be sent as %20.
    else kept.push(spec?.allowReserved ? `${rawKey}=${rawValue.replace(/\+/g, "%2B")}` : pair);
  }
  // the schema validator only requires a body whose schema has required properties
  if (op.bodyRequired && body === undefined) issues.push({ location: "body", name: "body", message: "is required" });
  if (body !== undefined) {
    for (const s of unstorableStrings(body)) issues.push({ location: "body", name: s.name, message: s.message });
    for (const place of op.bodyDates) {
      for (const [at, value] of valuesAt(body, place.path)) {
        const why = typeof value === "string" ? unstorableDate(value, place.format) : undefined;
        if (why) issues.push({ location: "body", name: at.join("."), message: why });
      }
    }
  }
  return { issues: dedupe(issues), clean: kept.join("&") };
}

/** The values at a schema place (`*` = every item or property) in a parsed body, with their paths. */
function valuesAt(body: unknown, path: readonly string[]): Array<[string[], unknown]> {
  let level: Array<[string[], unknown]> = [[[], body]];
  for (const segment of path) {
    const next: Array<[string[], unknown]> = [];
    for (const [at, node] of level) {
      if (segment === "*" && Array.isArray(node)) node.forEach((item, i) => next.push([[...at, String(i)], item]));
      else if (segment === "*" && isRecord(node)) for (const [k, item] of Object.entries(node)) next.push([[...at, k], item]);
      else if (isRecord(node) && Object.hasOwn(node, segment)) next.push([[...at, segment], node[segment]]);
    }
    level = next;
  }
  return level;
}

/** What is wrong with a raw (still percent-encoded) parameter value, if anything. */
function valueProblem(raw: string, spec: ContractParameter | undefined, query: boolean): string | undefined {
  const pieces = spec && !spec.explode ? raw.split(",") : [raw];
  for (const piece of pieces) {
    if (query && spec && !spec.allowReserved && RESERVED.test(piece)) {
      return "must be percent-encoded: reserved characters such as + : / ( ) must be sent as %XX";
    }
    const value = decode(piece, query && !spec?.allowReserved);
    if (value === undefined) return "is not valid percent-encoded UTF-8";
    const why = unstorable(value);
    if (why) return why;
    if (spec?.integer && !DECIMAL_INTEGER.test(value)) return "must be an integer written in plain decimal digits";
  }
  return undefined;
}

function decode(raw: string, form: boolean): string | undefined {
  try {
    return decodeURIComponent(form ? raw.replace(/\+/g, " ") : raw);
  } catch {
    return undefined;
  }
}

/** A name that cannot be decoded or stored is named as sent (still percent-encoded), so the problem can hold it. */
function printable(raw: string): string {
  return raw.slice(0, 100) || "(empty name)";
}

function dedupe(issues: ProblemIssue[]): ProblemIssue[] {
  const seen = new Set<string>();
  return issues.filter((i) => {
    const k = `${i.location}\u0001${i.name}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

export { dedupe as dedupeIssues };
