/**
 * Sends contract-generated requests to a running server and checks each answer against the
 * contract: never a 5xx, only documented statuses, a body that validates against the documented
 * schema, `X-Request-Id` on every response, and a 400 that names at least one parameter.
 * Shared by the test (fixed seed, bounded count) and `scripts/fuzz.ts` (any seed, any count).
 */
import { readFileSync } from "node:fs";
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import fc from "fast-check";
import { parse } from "yaml";
import { anyRequest, operations, type GeneratedRequest, type OperationInfo, type Spec } from "./contract-requests.js";

// ajv-formats is CommonJS: its default export arrives wrapped under ESM interop
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => Ajv;

export interface FuzzOptions {
  specPath: string;
  baseUrl: string;
  /** a token of one org holding every scope the contract requires */
  token: string;
  /** a token of the same org with too few scopes for most operations */
  weakToken?: string;
  seed: number;
  numRuns: number;
}

export interface FuzzStats {
  requests: number;
  byOperation: Record<string, Record<string, number>>;
}

/** The spec as ajv needs it: local refs made absolute, discriminator mappings removed (ajv refuses them). */
function forAjv(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(forAjv);
  if (node && typeof node === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) {
      if (k === "$ref" && typeof v === "string" && v.startsWith("#/")) out[k] = `spec${v}`;
      else if (k === "discriminator" && v && typeof v === "object") out[k] = { propertyName: (v as { propertyName: string }).propertyName };
      else out[k] = forAjv(v);
    }
    return out;
  }
  return node;
}

export function loadSpec(specPath: string): Spec {
  return parse(readFileSync(specPath, "utf8")) as Spec;
}

function responseValidators(spec: Spec): (op: OperationInfo, status: string, type: string) => ValidateFunction | undefined {
  const ajv = new Ajv({ strict: false, discriminator: true, allErrors: true, validateFormats: true });
  addFormats(ajv);
  ajv.addSchema(forAjv(spec) as object, "spec");
  const cache = new Map<string, ValidateFunction | undefined>();
  const ajvOps = new Map(operations(forAjv(spec) as Spec).map((o) => [o.operationId, o]));
  return (op, status, type) => {
    const key = `${op.operationId} ${status} ${type}`;
    if (!cache.has(key)) {
      const schema = ajvOps.get(op.operationId)?.responses[status]?.[type];
      cache.set(key, schema ? ajv.compile(schema) : undefined);
    }
    return cache.get(key);
  };
}

/** The operation a concrete URL names in the contract (templates as the server matches them). */
function operationRouter(ops: OperationInfo[]): (method: string, url: string) => OperationInfo | undefined {
  const routes = ops.map((op) => ({
    op,
    re: new RegExp(`^${op.path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\\\{[^}]+\\\}|\{[^}]+\}/g, "[^/]+")}/?$`),
  }));
  return (method, url) => {
    const path = url.split("?")[0]!;
    return routes.find((r) => r.op.method === method && r.re.test(path))?.op;
  };
}

/** What is wrong with one answer, by the contract; empty when nothing is. */
export function judge(op: OperationInfo, status: number, contentType: string, requestId: string | null, body: unknown, text: string, validate: ReturnType<typeof responseValidators>, streamed = false): string[] {
  const wrong: string[] = [];
  if (status >= 500) wrong.push(`answered ${status}`);
  if (!requestId) wrong.push("no X-Request-Id");
  const documented = op.responses[String(status)] ?? op.responses.default;
  if (!documented) return [...wrong, `status ${status} is not documented for ${op.operationId}`];
  const types = Object.keys(documented);
  const type = contentType.split(";")[0]!.trim();
  if (types.length === 0) {
    if (text.length > 0) wrong.push(`status ${status} documents no body but got ${text.slice(0, 100)}`);
    return wrong;
  }
  if (!types.includes(type)) return [...wrong, `content type ${type} is not documented for ${status} (${types.join(", ")})`];
  if (streamed) return wrong;
  const v = validate(op, String(status), type);
  if (v && !v(body)) wrong.push(`body does not match the contract: ${JSON.stringify(v.errors?.slice(0, 3))}`);
  if (status === 400) {
    const errors = (body as { errors?: unknown[] } | null)?.errors;
    if (!Array.isArray(errors) || errors.length === 0) wrong.push("a 400 that names no parameter");
  }
  if (body && typeof body === "object" && "request_id" in body && (body as { request_id: unknown }).request_id !== requestId) wrong.push("request_id differs from X-Request-Id");
  return wrong;
}

type Known = Map<string, string[]>;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Ids in answers, by field name; an object's own `id` also under `<its object>_id` (`webhook_endpoint_id`). */
function harvestIds(value: unknown, into: Known): void {
  const add = (key: string, id: string) => {
    const list = into.get(key) ?? [];
    if (!list.includes(id) && list.length < 200) list.push(id);
    into.set(key, list);
  };
  if (Array.isArray(value)) value.forEach((v) => harvestIds(v, into));
  else if (value && typeof value === "object") {
    const o = value as Record<string, unknown>;
    if (typeof o.id === "string" && UUID.test(o.id) && typeof o.object === "string") add(`${o.object}_id`, o.id);
    for (const [k, v] of Object.entries(o)) {
      if (typeof v === "string" && UUID.test(v)) add(k, v);
      else harvestIds(v, into);
    }
  }
}

/** The placeholder's field (`endpoint_id`, `question_set_ids`) matched against harvested names by suffix. */
function pickKnown(known: Known, field: string, n: number): string {
  const want = field.replace(/s$/, "");
  const keys = [...known.keys()].filter((k) => k !== "id" && want.length > 0 && (k.endsWith(want) || want.endsWith(k)));
  const pool = keys.length ? keys.flatMap((k) => known.get(k)!) : (known.get("id") ?? []);
  return pool[n % Math.max(pool.length, 1)] ?? "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f61";
}

function withKnownIds(text: string, known: Known): string {
  return text
    .replace(/@@known:([a-z_]*):(\d+)@@/g, (_, f: string, n: string) => pickKnown(known, f, Number(n)))
    .replace(/%40%40known%3A([a-z_]*)%3A(\d+)%40%40/g, (_, f: string, n: string) => pickKnown(known, f, Number(n)));
}

/**
 * Runs the property. Resolves with the statistics; rejects with fast-check's report (seed,
 * counterexample, and what the server answered) on the first request the contract forbids.
 */
export async function fuzzContract(o: FuzzOptions): Promise<FuzzStats> {
  const spec = loadSpec(o.specPath);
  const ops = operations(spec);
  const byId = new Map(ops.map((op) => [op.operationId, op]));
  const routeOf = operationRouter(ops);
  const validate = responseValidators(spec);
  const known: Known = new Map();
  const stats: FuzzStats = { requests: 0, byOperation: {} };

  const send = async (r: GeneratedRequest) => {
    const url = withKnownIds(r.url, known);
    // A dropped path parameter can turn the URL into another operation's (`/webhook_endpoints/`
    // is the list): the contract's answer is that operation's.
    const op = routeOf(r.method, url) ?? byId.get(r.operationId)!;
    const sent = typeof r.body === "string" ? withKnownIds(r.body, known) : r.body;
    // a hung request fails the property instead of the test's timeout
    const res = await fetch(o.baseUrl + url, { method: r.method, headers: r.headers, signal: AbortSignal.timeout(30_000), ...(sent !== undefined ? { body: sent } : {}) });
    // a listener's stream (Server-Sent Events) stays open: its status and headers are the answer
    const streamed = (res.headers.get("content-type") ?? "").startsWith("text/event-stream");
    if (streamed) await res.body?.cancel();
    const text = streamed ? "" : await res.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    stats.requests++;
    const perOp = (stats.byOperation[r.operationId] ??= {});
    perOp[res.status] = (perOp[res.status] ?? 0) + 1;
    if (res.ok) harvestIds(body, known);
    const wrong = judge(op, res.status, res.headers.get("content-type") ?? "", res.headers.get("x-request-id"), body, text, validate, streamed);
    if (wrong.length) {
      throw new Error(`${r.method} ${url} ${r.body !== undefined ? `body ${String(r.body).slice(0, 500)} ` : ""}(${r.mutated ?? "valid"}) → ${res.status} ${text.slice(0, 500)}\n  ${wrong.join("\n  ")}`);
    }
  };

  await fc.assert(fc.asyncProperty(anyRequest(spec, o.token, o.weakToken, ops), send), { seed: o.seed, numRuns: o.numRuns, endOnFailure: true });
  return stats;
}
