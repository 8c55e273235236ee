/**
 * Requests generated from the contract alone: every operation of openapi.yaml (internal ones
 * included), its parameters and its JSON body, valid or deliberately broken. Nothing here names
 * an operation or a field, so operations added to the contract are fuzzed without code.
 */
import fc from "fast-check";

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Schema = Record<string, unknown>;
export type Spec = Record<string, unknown>;

export interface ParamInfo {
  name: string;
  in: "query" | "path" | "header";
  required: boolean;
  schema: Schema;
}

export interface OperationInfo {
  operationId: string;
  method: string;
  path: string;
  params: ParamInfo[];
  body?: { required: boolean; schema: Schema };
  /** status → content type → schema (undefined: no body documented) */
  responses: Record<string, Record<string, Schema | undefined>>;
}

export interface GeneratedRequest {
  operationId: string;
  method: string;
  /** path and query, already encoded (possibly badly, on purpose) */
  url: string;
  headers: Record<string, string>;
  /** text, or bytes for bodies that are not valid UTF-8 on purpose */
  body?: string | Buffer;
  /** whether the generator broke something on purpose (a 2xx is then still allowed: broken may happen to be valid) */
  mutated: string | undefined;
}

/**
 * A uuid placeholder `@@known:<field>:<n>@@` the runner replaces with an id the server returned
 * earlier under a matching field name, so lookups, filters and cursors can hit.
 */
export const KNOWN_ID = /@@known:([a-z_]*):(\d+)@@/g;

const METHODS = ["get", "put", "post", "delete", "patch"];

function get(spec: Spec, ref: string): unknown {
  return ref
    .replace(/^[^#]*#\//, "")
    .split("/")
    .reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k.replace(/~1/g, "/").replace(/~0/g, "~")], spec);
}

export function deref<T = Schema>(spec: Spec, node: unknown): T {
  let n = node as Schema;
  for (let i = 0; n && typeof n.$ref === "string" && i < 20; i++) n = get(spec, n.$ref as string) as Schema;
  return n as T;
}

export function operations(spec: Spec): OperationInfo[] {
  const out: OperationInfo[] = [];
  for (const [path, rawItem] of Object.entries(spec.paths as Record<string, unknown>)) {
    const item = deref<Record<string, unknown>>(spec, rawItem);
    for (const method of METHODS) {
      const op = item[method] as Schema | undefined;
      if (!op) continue;
      const params = new Map<string, ParamInfo>();
      for (const raw of [...((item.parameters as unknown[]) ?? []), ...((op.parameters as unknown[]) ?? [])]) {
        const p = deref<Schema>(spec, raw);
        params.set(`${p.in}:${p.name}`, { name: String(p.name), in: p.in as ParamInfo["in"], required: p.required === true, schema: deref(spec, p.schema) });
      }
      const rb = deref<Schema | undefined>(spec, op.requestBody);
      const json = (rb?.content as Record<string, { schema?: unknown }> | undefined)?.["application/json"];
      const responses: OperationInfo["responses"] = {};
      for (const [status, rawRes] of Object.entries((op.responses as Record<string, unknown>) ?? {})) {
        const res = deref<Schema>(spec, rawRes);
        responses[status] = {};
        for (const [type, media] of Object.entries((res.content as Record<string, { schema?: unknown }>) ?? {})) responses[status]![type] = media.schema as Schema;
      }
      out.push({
        operationId: String(op.operationId),
        method: method.toUpperCase(),
        path,
        params: [...params.values()],
        ...(json ? { body: { required: rb?.required === true, schema: deref(spec, json.schema) } } : {}),
        responses,
      });
    }
  }
  return out;
}

/** Values that have broken servers before: wrong types, odd spellings, unstorable strings, extremes. */
const NASTY_STRINGS = [
  "", " ", "\u0000", "a\u0000b", "\ud800", "x\udc00y", "\ud83d\ude00", "Infinity", "-Infinity", "NaN", "1e400", "0x10", "1e1", " 5", "+5", "010", "-0",
  "-1", "0", "101", "9007199254740993", "true", "null", "[]", "{}", "a(b)", "it's!", "x*y", "%", "%zz", "%00", "a+b", "a b", "é", "\u202e", "😀",
  "../..", "/", "?", "#", "&", "=", ";", ",", "'; DROP TABLE x; --", "<script>", "x".repeat(300), "2026-13-45T99:99:99Z", "2026-11-21T09:30:00+01:00",
  "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f6", "00000000-0000-0000-0000-000000000000", "https://127.0.0.1/x", "https://localhost/x", "http://x.example-receiver.com/",
];
const NASTY_JSON: Json[] = [null, true, false, 0, -1, 1.5, 1e308, -1e308, 2 ** 53 + 1, [], {}, [null], { type: "none" }, "none", ...NASTY_STRINGS];

const nastyString = fc.constantFrom(...NASTY_STRINGS);
const nastyJson: fc.Arbitrary<Json> = fc.constantFrom(...NASTY_JSON);

function stringArb(s: Schema, name: string): fc.Arbitrary<string> {
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum.filter((v) => typeof v === "string") as string[]));
  const min = (s.minLength as number | undefined) ?? 0;
  const max = Math.min((s.maxLength as number | undefined) ?? 40, Math.max(min, 40));
  const fromExample = typeof s.example === "string" ? [fc.constant(s.example)] : [];
  switch (s.format) {
    case "uuid":
      return fc.oneof({ arbitrary: fc.uuid(), weight: 2 }, { arbitrary: fc.nat(1000).map((i) => `@@known:${name.toLowerCase().replace(/[^a-z_]/g, "")}:${i}@@`), weight: 3 });
    case "date-time":
      return fc
        .date({ min: new Date("1970-01-01T00:00:00Z"), max: new Date("2100-01-01T00:00:00Z"), noInvalidDate: true })
        .chain((d) => fc.constantFrom(d.toISOString(), d.toISOString().replace("Z", "+00:00"), d.toISOString().replace(".000Z", "Z")));
    default:
      if (typeof s.pattern === "string") return fc.oneof(...fromExample, fc.stringMatching(new RegExp(s.pattern)).filter((v) => v.length >= min && v.length <= ((s.maxLength as number) ?? Infinity)));
      return fc.oneof(...fromExample, ...fromExample, fc.string({ minLength: min, maxLength: max, unit: "grapheme" }));
  }
}

/** A value the schema accepts (modulo rules only the server knows, such as "this id exists"). */
export function valid(spec: Spec, raw: unknown, depth = 0, name = ""): fc.Arbitrary<Json> {
  const s = deref<Schema>(spec, raw) ?? {};
  let arb: fc.Arbitrary<Json>;
  if (Array.isArray(s.oneOf) || Array.isArray(s.anyOf)) {
    arb = fc.oneof(...((s.oneOf ?? s.anyOf) as unknown[]).map((b) => valid(spec, b, depth + 1, name)));
  } else if (Array.isArray(s.allOf)) {
    // `type: string, allOf: [$ref enum]`: the branches narrow the same value
    const merged = Object.assign({}, ...(s.allOf as unknown[]).map((b) => deref<Schema>(spec, b)), { ...s, allOf: undefined });
    arb = valid(spec, merged, depth + 1, name);
  } else if (Array.isArray(s.enum)) {
    arb = fc.constantFrom(...(s.enum as Json[]).filter((v) => v !== null));
  } else {
    switch (s.type) {
      case "string":
        arb = stringArb(s, name);
        break;
      case "integer":
      case "number": {
        const min = (s.minimum as number | undefined) ?? -1_000;
        const max = (s.maximum as number | undefined) ?? 1_000_000;
        arb = s.type === "integer" ? fc.integer({ min, max }) : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
        break;
      }
      case "boolean":
        arb = fc.boolean();
        break;
      case "array": {
        const minLength = (s.minItems as number | undefined) ?? 0;
        const maxLength = Math.min((s.maxItems as number | undefined) ?? 4, Math.max(minLength, depth > 2 ? 2 : 4));
        const items = valid(spec, s.items, depth + 1, name);
        arb = (s.uniqueItems ? fc.uniqueArray(items, { minLength, maxLength, selector: (v) => JSON.stringify(v) }) : fc.array(items, { minLength, maxLength })) as fc.Arbitrary<Json>;
        break;
      }
      default:
        arb = objectArb(spec, s, depth);
    }
  }
  return s.nullable ? fc.oneof({ arbitrary: arb, weight: 4 }, { arbitrary: fc.constant(null), weight: 1 }) : arb;
}

function objectArb(spec: Spec, s: Schema, depth: number): fc.Arbitrary<Json> {
  const props = (s.properties as Record<string, unknown>) ?? {};
  const required = (s.required as string[]) ?? [];
  const model: Record<string, fc.Arbitrary<Json>> = {};
  for (const [k, v] of Object.entries(props)) model[k] = valid(spec, v, depth + 1, k);
  let arb: fc.Arbitrary<Json> = fc.record(model, { requiredKeys: required.filter((k) => k in props) }) as fc.Arbitrary<Json>;
  const extra = s.additionalProperties;
  if (extra && typeof extra === "object") {
    const minKeys = (s.minProperties as number | undefined) ?? 0;
    const maxKeys = Math.min((s.maxProperties as number | undefined) ?? 4, 4);
    const dict = fc.dictionary(fc.string({ minLength: 1, maxLength: 20 }), valid(spec, extra, depth + 1), { minKeys, maxKeys });
    arb = fc.tuple(arb, dict).map(([a, b]) => {
      const merged: Json = { ...(b as object), ...(a as object) };
      return merged;
    });
  }
  return arb;
}

/** Every place in a JSON value, as a path of keys. */
function paths(value: Json, at: string[] = []): string[][] {
  const out: string[][] = [at];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...paths(v, [...at, String(i)])));
  else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) out.push(...paths(v, [...at, k]));
  return out;
}

function setAt(value: Json, at: string[], replacement: Json | undefined): Json | undefined {
  if (at.length === 0) return replacement;
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<string, Json>;
  const [head, ...rest] = at as [string, ...string[]];
  const next = setAt(copy[head]!, rest, replacement);
  if (next === undefined) delete copy[head];
  else copy[head] = next;
  return copy as Json;
}

/** One broken version of a valid body: a value replaced, removed, or an unknown key added. */
function brokenBody(body: Json): fc.Arbitrary<{ body: Json | undefined; how: string }> {
  const where = paths(body);
  return fc.tuple(fc.constantFrom(...where), fc.nat(2), nastyJson, fc.string({ maxLength: 12 })).map(([at, kind, nasty, key]) => {
    if (kind === 0) return { body: setAt(body, at, nasty), how: `body ${at.join(".") || "(root)"} := ${JSON.stringify(nasty)}` };
    if (kind === 1 && at.length > 0) return { body: setAt(body, at, undefined), how: `body ${at.join(".")} removed` };
    const target = at.length && body && typeof body === "object" ? at : [];
    return { body: setAt(body, [...target, `x_${key}`], nasty), how: `body ${[...target, `x_${key}`].join(".")} added` };
  });
}

/** RFC 3986 encoding; a lone surrogate (which encodeURIComponent refuses) goes out as its WTF-8 bytes. */
export function encode(value: string): string {
  return value.replace(/[\ud800-\udbff][\udc00-\udfff]|[\s\S]/g, (c) => {
    const u = c.charCodeAt(0);
    if (c.length === 1 && u >= 0xd800 && u <= 0xdfff) {
      return [0xe0 | (u >> 12), 0x80 | ((u >> 6) & 0x3f), 0x80 | (u & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join("");
    }
    return encodeURIComponent(c).replace(/[!'()*]/g, (x) => `%${x.charCodeAt(0).toString(16).toUpperCase()}`);
  });
}

interface ParamValues {
  values: Array<{ p: ParamInfo; value: Json }>;
}

function paramValues(spec: Spec, op: OperationInfo): fc.Arbitrary<ParamValues> {
  const entries = op.params.map((p) => {
    const arb = valid(spec, p.schema, 0, p.name).map((v) => [{ p, value: v }]);
    // optional parameters are usually absent, so valid requests with few filters (the ones that find data) are common
    return p.required ? arb : fc.oneof({ arbitrary: fc.constant([]), weight: 3 }, { arbitrary: arb, weight: 1 });
  });
  return fc.tuple(...entries).map((lists) => ({ values: lists.flat() }));
}

function serialize(values: ParamValues["values"], where: ParamInfo["in"]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const { p, value } of values) {
    if (p.in !== where || value === null) continue;
    for (const item of Array.isArray(value) ? value : [value]) out.push([p.name, String(item)]);
  }
  return out;
}

/** Broken parameters: a nasty value (encoded or raw), an odd name, or a missing required one. */
const paramBreak = fc.record({
  kind: fc.constantFrom("value", "raw-value", "unknown-name", "bracket-name", "drop", "duplicate"),
  nasty: nastyString,
  pick: fc.nat(100),
});

/**
 * Inputs that overwhelm rather than mistype: deep nesting, very wide arrays and objects, numbers
 * no double holds, a property name twice, bytes that are not UTF-8, and oversized headers. Sizes
 * stay under the body limit (1 MiB) so the body is read, not refused for its size.
 */
const HOSTILE_BODY = ["deep", "deep-inside", "wide-array", "wide-object", "huge-number", "duplicate-key", "invalid-utf8"] as const;
const HOSTILE_HEADER = ["big-header", "big-authorization"] as const;
type HostileKind = (typeof HOSTILE_BODY)[number] | (typeof HOSTILE_HEADER)[number];
const HUGE_NUMBERS = ["1e400", "-1e400", "1e-400", "123456789012345678901234567890123456789", `0.${"0".repeat(400)}1`, "9".repeat(400), "-0.0e-0"];
const BAD_UTF8 = [[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80], [0x80]];

const hostile = (withBody: boolean) =>
  fc.record({
    kind: fc.constantFrom<HostileKind>(...(withBody ? [...HOSTILE_BODY, ...HOSTILE_HEADER] : HOSTILE_HEADER)),
    size: fc.integer({ min: 33, max: 5_000 }),
    width: fc.integer({ min: 1_000, max: 60_000 }),
    pick: fc.nat(1_000),
  });

/** The valid body's text made hostile in one way (a Buffer when it is no longer UTF-8). */
function hostileBody(text: string, h: { kind: HostileKind; size: number; width: number; pick: number }): string | Buffer {
  const deep = "[".repeat(h.size) + "]".repeat(h.size);
  // the position right after the first `:` of the top-level object, where a value starts
  const colon = text.startsWith("{") ? text.indexOf(":") + 1 : 0;
  const replaceFirstValue = (value: string) => (colon > 0 ? `${text.slice(0, colon)}${value},${text.slice(colon)}`.replace(/,(,|})/, "$1") : value);
  switch (h.kind) {
    case "deep":
      return deep;
    case "deep-inside":
      return text.startsWith("{") && text !== "{}" ? `{"x_deep":${deep},${text.slice(1)}` : deep;
    case "wide-array":
      return replaceFirstValue(`[${"1,".repeat(h.width)}1]`);
    case "wide-object":
      return `{${Array.from({ length: h.width }, (_, i) => `"k${i}":0`).join(",")}}`;
    case "huge-number":
      return replaceFirstValue(HUGE_NUMBERS[h.pick % HUGE_NUMBERS.length]!);
    case "duplicate-key": {
      if (colon === 0) return `{"a":1,"a":2}`;
      // the first property again, in front: `{"k":<other>,"k":<original>,…}`
      return `{${text.slice(1, colon)}null,${text.slice(1)}`;
    }
    case "invalid-utf8": {
      const at = Math.min(text.length, (h.pick % Math.max(text.length - 1, 1)) + 1);
      return Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from(BAD_UTF8[h.pick % BAD_UTF8.length]!), Buffer.from(text.slice(at))]);
    }
    default:
      return text;
  }
}

/** `weakToken`: a token of the same org with too few scopes for most operations (403s). */
export function requestArbitrary(spec: Spec, op: OperationInfo, token: string, weakToken?: string): fc.Arbitrary<GeneratedRequest> {
  const body = op.body ? valid(spec, op.body.schema) : fc.constant(undefined);
  const mutation = fc.oneof(
    { arbitrary: fc.constant({ kind: "none" as const }), weight: 2 },
    { arbitrary: paramBreak.map((b) => ({ ...b, kind2: "param" as const, kind: b.kind })), weight: 2 },
    { arbitrary: fc.constantFrom("missing", "Bearer nope", "Basic dXNlcjpwYXNz", "Bearer ", "bearer", "weak", "weak").map((auth) => ({ kind: "auth" as const, auth })), weight: 1 },
    ...(op.body
      ? [
          {
            arbitrary: fc
              .constantFrom("text/plain", "application/xml", "application/x-www-form-urlencoded", "application/json; charset=utf-16", "application/merge-patch+json", "multipart/form-data; boundary=x")
              .map((type) => ({ kind: "content-type" as const, type })),
            weight: 1,
          },
          { arbitrary: fc.constant({ kind: "body" as const }), weight: 3 },
          { arbitrary: fc.constantFrom("empty", "not-json", "scalar", "wrong-type").map((k) => ({ kind: "body-raw" as const, raw: k })), weight: 1 },
        ]
      : []),
    { arbitrary: hostile(op.body !== undefined).map((h) => ({ kind: "hostile" as const, hostile: h })), weight: 1 },
  );
  return fc.tuple(paramValues(spec, op), body, mutation).chain(([params, validBody, m]) => {
    const bodyArb =
      m.kind === "body" && validBody !== undefined
        ? brokenBody(validBody as Json).map((b) => ({ text: b.body === undefined ? undefined : JSON.stringify(b.body), how: b.how as string | undefined }))
        : fc.constant({ text: validBody === undefined ? undefined : JSON.stringify(validBody), how: undefined as string | undefined });
    return bodyArb.map((b) => build(op, token, weakToken, params, b, m));
  });
}

function build(
  op: OperationInfo,
  token: string,
  weakToken: string | undefined,
  params: ParamValues,
  body: { text: string | undefined; how: string | undefined },
  m: { kind: string; kind2?: string; nasty?: string; pick?: number; raw?: string; auth?: string; type?: string; hostile?: { kind: HostileKind; size: number; width: number; pick: number } },
): GeneratedRequest {
  let query = serialize(params.values, "query").map(([k, v]) => `${encode(k)}=${encode(v)}`);
  const pathValues = new Map(serialize(params.values, "path"));
  let mutated: string | undefined = body.how;
  let bodyText: string | Buffer | undefined = body.text;
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  for (const [k, v] of serialize(params.values, "header")) headers[k] = v.replace(/[^\x20-\x7e]/g, "");

  if ("kind2" in m && m.kind2 === "param") {
    const candidates = op.params.filter((p) => p.in !== "header");
    const p = candidates.length ? candidates[m.pick! % candidates.length]! : undefined;
    const nasty = m.nasty!;
    switch (m.kind) {
      case "value":
      case "raw-value":
        if (p) {
          const v = m.kind === "raw-value" ? nasty.replace(/[\s%#&?/\u0000-\u001f]/g, "").replace(/[^\x21-\x7e]/g, "") : encode(nasty);
          if (p.in === "path") pathValues.set(p.name, nasty);
          else query = [...query.filter((q) => !q.startsWith(`${encode(p.name)}=`)), `${encode(p.name)}=${v}`];
          mutated = `${p.in} ${p.name} := ${JSON.stringify(nasty)}${m.kind === "raw-value" ? " (raw)" : ""}`;
        }
        break;
      case "unknown-name":
        query.push(`x_${m.pick}=${encode(nasty)}`);
        mutated = `query x_${m.pick} added`;
        break;
      case "bracket-name":
        if (p && p.in === "query") {
          query.push(`${encode(p.name)}%5B%5D=${encode(nasty)}`);
          mutated = `query ${p.name}[] added`;
        }
        break;
      case "drop":
        if (p) {
          if (p.in === "path") pathValues.set(p.name, "");
          query = query.filter((q) => !q.startsWith(`${encode(p.name)}=`));
          mutated = p.required ? `${p.in} ${p.name} dropped` : undefined;
        }
        break;
      case "duplicate":
        if (p && p.in === "query") {
          query.push(`${encode(p.name)}=${encode(nasty)}`, `${encode(p.name)}=${encode(nasty)}`);
          mutated = `query ${p.name} repeated`;
        }
        break;
    }
  }
  if (m.kind === "body-raw") {
    bodyText = { empty: "", "not-json": '{"a":', scalar: "42", "wrong-type": "[]" }[m.raw!];
    mutated = `body ${m.raw}`;
  }
  const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => encode(pathValues.get(name) ?? "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f61"));
  if (op.body || bodyText !== undefined) headers["content-type"] = "application/json";
  if (m.kind === "auth") {
    if (m.auth === "missing") delete headers.authorization;
    else if (m.auth === "weak") headers.authorization = weakToken ? `Bearer ${weakToken}` : headers.authorization!;
    else headers.authorization = m.auth!;
    mutated = `authorization ${m.auth}`;
  }
  if (m.kind === "content-type") {
    headers["content-type"] = m.type!;
    mutated = `content-type ${m.type}`;
  }
  if (m.kind === "hostile" && m.hostile) {
    const h = m.hostile;
    mutated = `hostile ${h.kind}`;
    if (h.kind === "big-header") headers[`x-fuzz-${h.pick}`] = "a".repeat(16 * 1024 + h.size);
    else if (h.kind === "big-authorization") headers.authorization = `Bearer ${"A".repeat(h.width * 16)}`;
    else if (typeof bodyText === "string") bodyText = hostileBody(bodyText, h);
  }
  return {
    operationId: op.operationId,
    method: op.method,
    url: path + (query.length ? `?${query.join("&")}` : ""),
    headers,
    ...(bodyText !== undefined ? { body: bodyText } : {}),
    mutated,
  };
}

/** Any operation, uniformly. */
export function anyRequest(spec: Spec, token: string, weakToken?: string, ops = operations(spec)): fc.Arbitrary<GeneratedRequest> {
  return fc.oneof(...ops.map((op) => requestArbitrary(spec, op, token, weakToken)));
}
