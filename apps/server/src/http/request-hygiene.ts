import type { ProblemIssue } from "@audit-review/api-types/internal";
import { arrayOf, isRecord, recordOf, type JsonObject as Json } from "../lib/narrow.js";
import { unstorable, unstorableStrings } from "./storable-strings.js";

/**
 * Checks of the raw request that the schema validator cannot make, because it only sees values
 * after they were decoded and coerced: how a value was spelled (integers in plain decimal digits,
 * reserved characters percent-encoded, valid UTF-8 percent-encoding), parameter names exactly as
 * the contract spells them (`id[]` is not `id`), and the one string rule. Everything comes from
 * the contract, so a new operation or parameter is covered without code.
 */

interface ParamSpec {
  name: string;
  in: string;
  allowReserved: boolean;
  explode: boolean;
  /** `integer` for integer parameters (or arrays of integers): decimal spelling is enforced */
  integer: boolean;
}

interface OperationSpec {
  method: string;
  re: RegExp;
  pathNames: string[];
  params: ParamSpec[];
  bodyRequired: boolean;
}


const METHODS = ["get", "put", "post", "delete", "patch"] as const;
// RFC 3986 gen-delims and sub-delims: the validator's "must be url encoded" set. A raw `+` is the
// dangerous one: form decoding turns it into a space (`+01:00` would silently become ` 01:00`).
const RESERVED = /[:/?#[\]@!$&'()*+,;=]/;
const DECIMAL_INTEGER = /^-?(?:0|[1-9][0-9]*)$/;

function resolve(spec: Json, node: unknown): Json {
  let n: unknown = node;
  for (let i = 0; isRecord(n) && typeof n.$ref === "string" && i < 20; i++) {
    n = n.$ref
      .replace(/^#\//, "")
      .split("/")
      .reduce<unknown>((o, k) => (isRecord(o) ? o[k.replace(/~1/g, "/").replace(/~0/g, "~")] : undefined), spec);
  }
  return recordOf(n);
}

function isInteger(spec: Json, schemaRef: unknown): boolean {
  const schema = resolve(spec, schemaRef);
  if (schema.type === "array") return isInteger(spec, schema.items);
  return schema.type === "integer";
}

export class RequestHygiene {
  private readonly operations: OperationSpec[] = [];

  constructor(spec: Json) {
    const server = recordOf(arrayOf(spec.servers)[0]);
    const basePath = new URL(typeof server.url === "string" ? server.url : "/", "http://x").pathname.replace(/\/$/, "");
    for (const [path, rawItem] of Object.entries(recordOf(spec.paths))) {
      const item = resolve(spec, rawItem);
      for (const method of METHODS) {
        const op = item[method];
        if (!isRecord(op)) continue;
        const byKey = new Map<string, ParamSpec>();
        for (const raw of [...arrayOf(item.parameters), ...arrayOf(op.parameters)]) {
          const p = resolve(spec, raw);
          byKey.set(`${p.in}:${p.name}`, {
            name: String(p.name),
            in: String(p.in),
            allowReserved: p.allowReserved === true,
            explode: p.explode !== false,
            integer: isInteger(spec, p.schema),
          });
        }
        const pathNames: string[] = [];
        const pattern = (basePath + path)
          .split(/(\{[^}]+\})/)
          .map((part) => {
            const m = /^\{([^}]+)\}$/.exec(part);
            if (!m) return part.replace(/[.*+?^$()|[\]\\]/g, "\\$&");
            pathNames.push(m[1]!);
            return "([^/]+)";
          })
          .join("");
        this.operations.push({
          method: method.toUpperCase(),
          re: new RegExp(`^${pattern}/?$`),
          pathNames,
          params: [...byKey.values()],
          bodyRequired: resolve(spec, op.requestBody).required === true,
        });
      }
    }
  }

  /** Every problem of the raw request; `clean` is the query string without the offending pairs. */
  check(method: string, rawPath: string, rawQuery: string, body: unknown): { issues: ProblemIssue[]; clean: string } {
    const op = this.operations.find((o) => o.method === method && o.re.test(rawPath));
    const issues: ProblemIssue[] = [];
    if (!op) return { issues, clean: rawQuery };
    const m = op.re.exec(rawPath)!;
    op.pathNames.forEach((name, i) => {
      const spec = op.params.find((p) => p.in === "path" && p.name === name);
      const why = valueProblem(m[i + 1]!, spec, false);
      if (why) issues.push({ location: "path", name, message: why });
    });

    const kept: string[] = [];
    for (const pair of rawQuery.split("&")) {
      if (pair === "") continue;
      const eq = pair.indexOf("=");
      const rawKey = eq < 0 ? pair : pair.slice(0, eq);
      const rawValue = eq < 0 ? "" : pair.slice(eq + 1);
      const key = decode(rawKey, true);
      const spec = key === undefined ? undefined : op.params.find((p) => p.in === "query" && p.name === key);
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
    for (const s of body === undefined ? [] : unstorableStrings(body)) issues.push({ location: "body", name: s.name, message: s.message });
    return { issues: dedupe(issues), clean: kept.join("&") };
  }
}

/** What is wrong with a raw (still percent-encoded) parameter value, if anything. */
function valueProblem(raw: string, spec: ParamSpec | undefined, query: boolean): string | undefined {
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
