import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const spec = parse(readFileSync(join(root, "openapi/openapi.yaml"), "utf8"));
const checklist = parse(readFileSync(join(root, "openapi/seed-checklist.yaml"), "utf8")) as {
  schemas: Record<string, string[]>;
  enums: Record<string, string[]>;
  operations: Record<string, { method: string; path: string; scope: string; params: string[] }>;
  limits: Array<[string, string, number]>;
  seed_tables: Record<string, string>;
};

type Schema = { $ref?: string; properties?: Record<string, Schema>; allOf?: Schema[]; oneOf?: Schema[]; enum?: unknown[] } & Record<string, unknown>;
const deref = (s: Schema): Schema => (s.$ref ? deref(spec.components.schemas[s.$ref.split("/").pop()!]) : s);
const deref2 = (p: Schema & { $ref?: string }) => (p.$ref ? spec.components.parameters[p.$ref.split("/").pop()!] : p);

function properties(name: string): Record<string, Schema> {
  const s = deref({ $ref: `#/components/schemas/${name}` });
  return Object.assign({}, s.properties, ...(s.allOf ?? []).map((p) => deref(p).properties ?? {}));
}

function enumValues(name: string): unknown[] {
  const s = deref({ $ref: `#/components/schemas/${name}` });
  if (s.enum) return s.enum;
  return (s.oneOf ?? []).flatMap((b) => deref(b).properties?.type?.enum ?? []);
}

const operationById = (id: string) => {
  for (const [path, item] of Object.entries<Record<string, { operationId?: string; parameters?: Schema[] }>>(spec.paths)) {
    for (const [method, op] of Object.entries(item)) if (op.operationId === id) return { path, method, op };
  }
  throw new Error(`no operation ${id}`);
};

describe("the contract holds every name of the seed", () => {
  it.each(Object.entries(checklist.schemas))("when %s is read, then it has every seed field", (name, fields) => {
    expect(Object.keys(properties(name))).toEqual(expect.arrayContaining(fields));
  });

  it.each(Object.entries(checklist.enums))("when enum %s is read, then it has every seed value", (name, values) => {
    expect(enumValues(name)).toEqual(expect.arrayContaining(values));
  });

  it.each(Object.entries(checklist.operations))("when operation %s is read, then path, scope and parameters match", (id, want) => {
    const { path, method, op } = operationById(id);
    expect({ path, method }).toEqual({ path: want.path, method: want.method });
    expect((op as Record<string, unknown>)["x-required-scopes"]).toEqual([want.scope]);
    const names = (op.parameters ?? []).map((p) => deref2(p).name);
    expect(names).toEqual(expect.arrayContaining(want.params));
  });

  it.each(checklist.limits)("when %s is read, then %s is %s", (where, keyword, value) => {
    const [owner, field] = where.split(".");
    let schema: Schema;
    if (!field) schema = spec.components.parameters[owner!].schema;
    else if (spec.components.schemas[owner!]) schema = properties(owner!)[field]!;
    else schema = deref2((operationById(owner!).op.parameters ?? []).map(deref2).find((p: { name: string }) => p.name === field)).schema;
    expect(schema[keyword]).toBe(value);
  });
});

const seedDir = resolve(root, "../shared/seed");
const seedFile = existsSync(seedDir) ? readdirSync(seedDir).find((f) => f.endsWith(".txt")) : undefined;

/** First-column entries of the first markdown table after the heading that starts with `key`. */
function seedTableRows(lines: string[], key: string): string[] {
  const start = lines.findIndex((l) => l.replace(/^#+\s*/, "").startsWith(key));
  if (start < 0) throw new Error(`seed heading ${key} not found`);
  let i = start + 1;
  while (i < lines.length && !lines[i]!.startsWith("|")) i++;
  const rows: string[] = [];
  for (i += 2; i < lines.length && lines[i]!.startsWith("|"); i++) {
    const cell = lines[i]!.split("|")[1]!.trim();
    rows.push(...cell.split(",").map((c) => c.replace(/`/g, "").trim()).filter(Boolean));
  }
  return rows;
}

describe.runIf(seedFile)("the checklist lists every row of the seed's tables", () => {
  const lines = seedFile ? readFileSync(join(seedDir, seedFile), "utf8").split("\n") : [];
  it.each(Object.entries(checklist.seed_tables))("when the seed table under %s is read, then %s lists all its rows", (heading, target) => {
    const listed = target.split("+").flatMap((t) => checklist.schemas[t] ?? checklist.operations[t]?.params ?? []);
    expect(listed.length).toBeGreaterThan(0);
    expect(listed).toEqual(expect.arrayContaining(seedTableRows(lines, heading)));
  });
});

describe("the contract's own rules", () => {
  it("when any component schema is read, then it carries an example", () => {
    const missing = Object.entries<Schema>(spec.components.schemas).filter(([, s]) => s.example === undefined).map(([n]) => n);
    expect(missing).toEqual([]);
  });

  const METHODS = new Set(["get", "put", "post", "delete", "patch", "head", "options", "trace"]);
  it("when any operation is read, then it states its required scope and its 400/401/403/500 answers", () => {
    for (const item of Object.values<Record<string, Record<string, unknown>>>(spec.paths)) {
      // path-level `parameters` (the id of a /{…} path) is not an operation
      for (const op of Object.entries(item).filter(([key]) => METHODS.has(key)).map(([, op]) => op)) {
        if (op.tags && (op.tags as string[]).includes("Service")) continue; // tokenless: next test
        expect(op["x-required-scopes"], String(op.operationId)).toHaveLength(1);
        expect(Object.keys(op.responses as object), String(op.operationId)).toEqual(expect.arrayContaining(["400", "401", "403", "500"]));
      }
    }
  });

  it("when a Service operation (health, docs, spec) is read, then it needs no token, no scope, and states its 400", () => {
    const service = Object.entries<Record<string, Record<string, unknown>>>(spec.paths).flatMap(([path, item]) =>
      Object.values(item).filter((op) => (op.tags as string[] | undefined)?.includes("Service")).map((op) => ({ path, op })),
    );
    expect(service.map((s) => s.path).sort()).toEqual(["/docs", "/healthz", "/openapi.json", "/openapi.yaml", "/readyz"]);
    for (const { op } of service) {
      expect(op.security, String(op.operationId)).toEqual([]);
      expect(op["x-required-scopes"], String(op.operationId)).toEqual([]);
      expect(Object.keys(op.responses as object), String(op.operationId)).toEqual(expect.arrayContaining(["200", "400"]));
    }
  });

  it("when the public bundle is built, then no internal operation or path is in it", () => {
    const bundle = parse(readFileSync(join(root, "openapi/dist/openapi.public.yaml"), "utf8"));
    expect(Object.keys(bundle.paths).filter((p) => p.includes("/internal/"))).toEqual([]);
    expect(JSON.stringify(bundle)).not.toContain('"x-internal":true');
    expect(Object.keys(bundle.paths).sort()).toEqual([
      "/docs",
      "/healthz",
      "/openapi.json",
      "/openapi.yaml",
      "/readyz",
      "/v2/coding_evaluations",
      "/v2/events",
      "/v2/events/{event_id}",
      "/v2/portal_sessions",
      "/v2/question_sets",
      "/v2/webhook_deliveries",
      "/v2/webhook_deliveries/{delivery_id}",
      "/v2/webhook_deliveries/{delivery_id}/attempts",
      "/v2/webhook_deliveries/{delivery_id}/retry",
      "/v2/webhook_endpoints",
      "/v2/webhook_endpoints/{endpoint_id}",
      "/v2/webhook_endpoints/{endpoint_id}/recover",
      "/v2/webhook_endpoints/{endpoint_id}/rotate_secret",
      "/v2/webhook_endpoints/{endpoint_id}/test",
      "/v2/webhook_listeners",
      "/v2/webhook_listeners/{listener_id}/answers",
      "/v2/webhook_listeners/{listener_id}/stream",
    ]);
  });
});
