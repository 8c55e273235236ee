// The one reader of openapi.yaml: parsed once at start-up, references resolved here, paths
// matched here. Authorization (scopes), the raw-request rules, the schema validator's route
// lookup and the body date checks all ask this module, so the contract is interpreted once
// and a new operation or parameter is covered without code.
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { arrayOf, isRecord, recordOf, type JsonObject } from "../lib/narrow.js";
import { internOneByteNames } from "../lib/one-byte-names.js";

const METHODS = ["get", "put", "post", "delete", "patch"] as const;
/** Far beyond any chain the contract writes: a cycle of `$ref`s stops here instead of looping. */
const MAX_REF_HOPS = 20;
/** How deep the body schemas are searched for date fields (the contract's deepest is 6). */
const MAX_SCHEMA_DEPTH = 24;

export interface ContractParameter {
  name: string;
  in: "query" | "path" | "header" | "cookie";
  allowReserved: boolean;
  explode: boolean;
  /** an integer (or an array of integers): spelled in plain decimal digits */
  integer: boolean;
}

/** A place in a request body holding a date the server stores; `*` stands for every item. */
export interface BodyDate {
  path: readonly string[];
  format: "date" | "date-time";
}

export interface ContractOperation {
  operationId: string;
  /** upper case, as in `req.method` */
  method: string;
  /** the contract's path template, e.g. `/v2/webhook_endpoints/{endpoint_id}` */
  path: string;
  requiredScopes: readonly string[];
  internal: boolean;
  /** `security: []`: no token (health, docs, the spec itself) */
  public: boolean;
  parameters: readonly ContractParameter[];
  bodyRequired: boolean;
  bodyDates: readonly BodyDate[];
}

export interface OperationMatch {
  operation: ContractOperation;
  /** the path parameters as sent (still percent-encoded), by name */
  pathValues: ReadonlyArray<[name: string, raw: string]>;
}

/** A compiled path, in the shape path-to-regexp gives (what the schema validator consumes). */
export interface CompiledRoute {
  regexp: RegExp;
  keys: ReadonlyArray<{ name: string }>;
}

export interface Contract {
  /** the parsed document, as written (references unresolved) */
  document: JsonObject;
  /** the path part of `servers[0].url`, without a trailing slash ("" for a bare host) */
  basePath: string;
  operations: readonly ContractOperation[];
  /** follows `$ref`s (local ones) to the node they name; a non-object gives `{}` */
  resolve(node: unknown): JsonObject;
  /** the operation a request path names (raw, base path included), the first in contract order */
  match(method: string, path: string): OperationMatch | undefined;
  /** a contract path in Express's spelling (`/v2/x/:id`, base path included), compiled once; case-sensitive, trailing slash optional */
  route(expressPath: string): CompiledRoute | undefined;
}

const escape = (s: string) => s.replace(/[.*+?^$()|[\]\\{}]/g, "\\$&");

interface Compiled {
  operation: ContractOperation;
  literal: string | null;
  regexp: RegExp;
  names: string[];
}

/** Reads and indexes the contract. Call once per process (the server does, at start-up). */
export function loadContract(specPath: string): Contract {
  // before anything parses the YAML: see one-byte-names.ts
  internOneByteNames(specPath);
  return indexContract(recordOf(parse(readFileSync(specPath, "utf8"))));
}

export function indexContract(document: JsonObject): Contract {
  const resolve = (node: unknown): JsonObject => {
    let n = node;
    for (let hops = 0; isRecord(n) && typeof n.$ref === "string" && hops < MAX_REF_HOPS; hops++) {
      n = n.$ref
        .replace(/^#\//, "")
        .split("/")
        .reduce<unknown>((o, k) => (isRecord(o) ? o[k.replace(/~1/g, "/").replace(/~0/g, "~")] : undefined), document);
    }
    return recordOf(n);
  };
  const server = recordOf(arrayOf(document.servers)[0]);
  const basePath = new URL(typeof server.url === "string" ? server.url : "/", "http://x").pathname.replace(/\/$/, "");

  const isInteger = (schema: unknown): boolean => {
    const s = resolve(schema);
    return s.type === "array" ? isInteger(s.items) : s.type === "integer";
  };

  const compiled: Compiled[] = [];
  const routes = new Map<string, CompiledRoute>();
  for (const [path, rawItem] of Object.entries(recordOf(document.paths))) {
    const item = resolve(rawItem);
    const names: string[] = [];
    const pattern = (basePath + path)
      .split(/(\{[^}]+\})/)
      .map((part) => {
        const m = /^\{([^}]+)\}$/.exec(part);
        if (!m) return escape(part);
        names.push(m[1]!);
        return "([^/]+)";
      })
      .join("");
    const regexp = new RegExp(`^${pattern}/?$`);
    routes.set((basePath + path).replace(/\{([^}]+)\}/g, ":$1"), Object.freeze({ regexp, keys: Object.freeze(names.map((name) => Object.freeze({ name }))) }));
    for (const method of METHODS) {
      const op = item[method];
      if (!isRecord(op)) continue;
      const scopes = op["x-required-scopes"];
      if (typeof op.operationId !== "string" || !Array.isArray(scopes) || !scopes.every((s) => typeof s === "string")) {
        throw new Error(`${method} ${path} lacks operationId or x-required-scopes`);
      }
      const byKey = new Map<string, ContractParameter>();
      for (const raw of [...arrayOf(item.parameters), ...arrayOf(op.parameters)]) {
        const p = resolve(raw);
        byKey.set(`${p.in}:${p.name}`, {
          name: String(p.name),
          in: p.in === "path" || p.in === "header" || p.in === "cookie" ? p.in : "query",
          allowReserved: p.allowReserved === true,
          explode: p.explode !== false,
          integer: isInteger(p.schema),
        });
      }
      const body = resolve(op.requestBody);
      const operation: ContractOperation = {
        operationId: op.operationId,
        method: method.toUpperCase(),
        path,
        requiredScopes: scopes,
        internal: op["x-internal"] === true,
        public: Array.isArray(op.security) && op.security.length === 0,
        parameters: [...byKey.values()],
        bodyRequired: body.required === true,
        bodyDates: datePlaces(resolve, recordOf(recordOf(body.content)["application/json"]).schema),
      };
      compiled.push({ operation, literal: names.length ? null : basePath + path, regexp, names });
    }
  }

  // Every request asks, so the entries are grouped by method once, and a path without
  // parameters is compared as a string (with or without its trailing slash, as the pattern
  // allows) instead of by regex.
  const byMethod = new Map<string, Compiled[]>();
  for (const c of compiled) byMethod.set(c.operation.method, [...(byMethod.get(c.operation.method) ?? []), c]);

  return {
    document,
    basePath,
    operations: compiled.map((c) => c.operation),
    resolve,
    match(method, path) {
      for (const c of byMethod.get(method) ?? []) {
        if (c.literal !== null) {
          if (path === c.literal || (path.length === c.literal.length + 1 && path.endsWith("/") && path.startsWith(c.literal))) return { operation: c.operation, pathValues: [] };
          continue;
        }
        const m = c.regexp.exec(path);
        if (m) return { operation: c.operation, pathValues: c.names.map((name, i) => [name, m[i + 1]!]) };
      }
      return undefined;
    },
    route: (expressPath) => routes.get(expressPath),
  };
}

/** The places in a body schema that hold a `date` or `date-time` string. */
function datePlaces(resolve: (node: unknown) => JsonObject, root: unknown): BodyDate[] {
  const found = new Map<string, BodyDate>();
  const visit = (node: unknown, at: string[], depth: number): void => {
    if (depth > MAX_SCHEMA_DEPTH) return;
    const s = resolve(node);
    if (s.format === "date" || s.format === "date-time") found.set(at.join("\u0000"), { path: at, format: s.format });
    for (const branch of [...arrayOf(s.allOf), ...arrayOf(s.oneOf), ...arrayOf(s.anyOf)]) visit(branch, at, depth + 1);
    for (const [key, sub] of Object.entries(recordOf(s.properties))) visit(sub, [...at, key], depth + 1);
    if (s.items !== undefined) visit(s.items, [...at, "*"], depth + 1);
    if (isRecord(s.additionalProperties)) visit(s.additionalProperties, [...at, "*"], depth + 1);
  };
  if (root !== undefined) visit(root, [], 0);
  return [...found.values()];
}
