// Code samples for every public operation, from one source: openapi/code-samples.yaml says which
// request each operation's samples make; this module renders it as curl, TypeScript
// (@audit-review/client), Python (the README's generated `openapi_client`) and Go (the README's
// generated `ars` package), reading parameter and body types from the bundle itself, and merges
// them into the bundle as Redoc's `x-codeSamples`. A public operation without an entry, an entry
// without an operation, or a value the renderers cannot express fails the build: the docs never
// lack a sample or show one that was not rendered from the contract.
import { readFileSync } from "node:fs";
import { parse } from "yaml";

export const DOCS_BASE_URL = "https://api.audit-review.dev";
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
export const LANGUAGES = [
  { lang: "Shell", label: "curl", key: "curl" },
  { lang: "TypeScript", label: "TypeScript", key: "ts" },
  { lang: "Python", label: "Python", key: "python" },
  { lang: "Go", label: "Go", key: "go" },
];

export function readSampleSource(file) {
  return parse(readFileSync(file, "utf8"));
}

/** Every operation of the bundle, with its parameters resolved. */
export function operationsOf(spec) {
  const ops = [];
  for (const [path, item] of Object.entries(spec.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) => resolve(spec, p));
      ops.push({ path, method, op, params, operationId: op.operationId });
    }
  }
  return ops;
}

/** Renders every operation's samples; `fixtures` replace `{name}` values, `baseUrl` the server. */
export function renderAll(spec, source, { baseUrl = DOCS_BASE_URL, fixtures = source.fixtures ?? {}, clientMethods } = {}) {
  const ops = operationsOf(spec);
  const known = new Set(ops.map((o) => o.operationId));
  const entries = source.operations ?? {};
  const missing = ops.filter((o) => !(o.operationId in entries)).map((o) => `${o.method.toUpperCase()} ${o.path} (${o.operationId})`);
  if (missing.length) throw new Error(`openapi/code-samples.yaml has no sample for: ${missing.join(", ")}`);
  const stray = Object.keys(entries).filter((id) => !known.has(id));
  if (stray.length) throw new Error(`openapi/code-samples.yaml names operations that are not public: ${stray.join(", ")}`);
  const out = {};
  for (const o of ops) {
    const request = substitute(entries[o.operationId] ?? {}, fixtures);
    const ctx = { spec, o, request, baseUrl, clientMethods, where: `code sample of ${o.operationId}` };
    checkParams(ctx);
    out[o.operationId] = { curl: renderCurl(ctx), ts: renderTs(ctx), python: renderPython(ctx), go: renderGo(ctx) };
  }
  return out;
}

/** The bundle with `x-codeSamples` on every operation. */
export function withCodeSamples(spec, source, options) {
  const out = structuredClone(spec);
  const samples = renderAll(out, source, options);
  for (const o of operationsOf(out)) {
    o.op["x-codeSamples"] = LANGUAGES.map(({ lang, label, key }) => ({ lang, label, source: samples[o.operationId][key] }));
  }
  return out;
}

// ---- shared helpers ------------------------------------------------------------------------

function resolve(spec, node) {
  let n = node;
  while (n && n.$ref) n = n.$ref.split("/").slice(1).reduce((acc, k) => acc[k.replace(/~1/g, "/").replace(/~0/g, "~")], spec);
  return n;
}
const refName = (schema) => schema?.$ref?.split("/").pop();

function substitute(value, fixtures) {
  if (typeof value === "string") {
    return value.replace(/\{([a-z_]+)\}/g, (m, name) => {
      if (!(name in fixtures)) throw new Error(`code sample fixture {${name}} is not defined`);
      return fixtures[name];
    });
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, fixtures));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, fixtures)]));
  return value;
}

function checkParams({ o, request, where }) {
  for (const location of ["path", "query", "headers"]) {
    const inName = location === "headers" ? "header" : location;
    for (const name of Object.keys(request[location] ?? {})) {
      if (!o.params.some((p) => p.in === inName && p.name === name)) throw new Error(`${where}: ${o.operationId} has no ${inName} parameter ${name}`);
    }
  }
  for (const p of o.params.filter((p) => p.in === "path")) {
    if (request.path?.[p.name] === undefined) throw new Error(`${where}: path parameter ${p.name} has no value`);
  }
  if (request.body !== undefined && !o.op.requestBody) throw new Error(`${where}: ${o.operationId} takes no body`);
  if (o.op.requestBody?.required && request.body === undefined) throw new Error(`${where}: ${o.operationId} needs a body`);
}

const pathParamOrder = (o) => [...o.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
const needsToken = (spec, o) => (o.op.security ?? spec.security ?? []).some((req) => Object.keys(req).length > 0);
const isList = (o) => o.operationId.startsWith("list");
const successStatus = (o) => Object.keys(o.op.responses).find((s) => s.startsWith("2"));
const successMedia = (o) => Object.keys(o.op.responses[successStatus(o)]?.content ?? {})[0];
const resultName = (o) => (isList(o) ? "page" : successMedia(o) ? "result" : null);
const pascal = (s) => s.split(/[^A-Za-z0-9]+/).filter(Boolean).map((w) => w[0].toUpperCase() + w.slice(1)).join("");
const camel = (s) => {
  const p = pascal(s);
  return p[0].toLowerCase() + p.slice(1);
};
const snake = (s) => s.replace(/([a-z0-9])([A-Z])/g, "$1_$2").replace(/[^A-Za-z0-9]+/g, "_").toLowerCase();
const tagOf = (o) => o.op.tags?.[0] ?? "Default";

function queryString(query) {
  const parts = [];
  for (const [k, v] of Object.entries(query ?? {})) for (const one of [v].flat()) parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(one))}`);
  return parts.length ? `?${parts.join("&")}` : "";
}

function fillPath(o, values) {
  return o.path.replace(/\{([^}]+)\}/g, (_, name) => encodeURIComponent(String(values[name])));
}

// ---- curl --------------------------------------------------------------------------------

function renderCurl({ spec, o, request, baseUrl }) {
  const url = `${baseUrl}${fillPath(o, request.path ?? {})}${queryString(request.query)}`;
  const lines = [`curl ${o.method === "get" ? "" : `-X ${o.method.toUpperCase()} `}'${url}'`];
  if (needsToken(spec, o)) lines.push(`-H "Authorization: Bearer $ARS_TOKEN"`);
  for (const [k, v] of Object.entries(request.headers ?? {})) lines.push(`-H '${k}: ${v}'`);
  if (request.body !== undefined) {
    lines.push(`-H 'Content-Type: application/json'`);
    lines.push(`-d '${JSON.stringify(request.body, null, 2).replace(/'/g, "'\\''")}'`);
  }
  return lines.join(" \\\n  ");
}

// ---- TypeScript (@audit-review/client) ------------------------------------------------------

function tsValue(v, indent = "") {
  if (Array.isArray(v)) return `[${v.map((x) => tsValue(x, indent)).join(", ")}]`;
  if (v && typeof v === "object") {
    const inner = `${indent}  `;
    const entries = Object.entries(v).map(([k, x]) => `${inner}${/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k)}: ${tsValue(x, inner)},`);
    return `{\n${entries.join("\n")}\n${indent}}`;
  }
  return JSON.stringify(v);
}

function renderTs({ o, request, baseUrl, clientMethods }) {
  const lines = [`import { createClient } from "@audit-review/client";`, ""];
  // The client always sends a token; operations that need none ignore it.
  lines.push(`const client = createClient({ baseUrl: "${baseUrl}", token: process.env.ARS_TOKEN! });`);
  const name = resultName(o);
  const assign = name ? `const ${name} = ` : "";
  const headers = request.headers ?? {};
  const hasMethod = !clientMethods || clientMethods.has(o.operationId);
  if (hasMethod && o.path.startsWith("/v2/")) {
    const args = pathParamOrder(o).map((p) => JSON.stringify(request.path[p]));
    if (request.query) args.push(tsValue(request.query));
    else if (request.body !== undefined) args.push(tsValue(request.body));
    const options = [];
    for (const [k, v] of Object.entries(headers)) {
      if (k.toLowerCase() === "idempotency-key") options.push(`idempotencyKey: ${JSON.stringify(v)}`);
      else throw new Error(`code sample of ${o.operationId}: TypeScript cannot send header ${k}`);
    }
    if (options.length) {
      if (!request.query && request.body === undefined && args.length === pathParamOrder(o).length && o.op.requestBody) args.push("undefined");
      args.push(`{ ${options.join(", ")} }`);
    }
    lines.push(`${assign}await client.${o.operationId}(${args.join(", ")});`);
  } else {
    // Operations without a convenience method: the typed openapi-fetch client underneath.
    const params = Object.fromEntries([["path", request.path], ["query", request.query], ["header", Object.keys(headers).length ? headers : undefined]].filter(([, v]) => v));
    const init = { ...(Object.keys(params).length && { params }), ...(request.body !== undefined && { body: request.body }) };
    const media = successMedia(o);
    if (media && !media.includes("json")) init.parseAs = "text";
    const initText = Object.keys(init).length ? `, ${tsValue(init)}` : "";
    lines.push(`const { data: ${name ?? "_"}, error } = await client.raw.${o.method.toUpperCase()}("${o.path}"${initText});`);
    lines.push(`if (error !== undefined) throw new Error(String(error));`);
  }
  if (name) lines.push(successMedia(o)?.includes("json") ? `console.log(JSON.stringify(${name}, null, 2));` : `console.log(${name});`);
  return lines.join("\n");
}

// ---- Python (openapi_client generated by the README's command) -------------------------------

function pyValue(spec, schema, v, where) {
  const s = resolve(spec, schema) ?? {};
  if (v === null) return "None";
  if (Array.isArray(v)) return `[${v.map((x) => pyValue(spec, s.items, x, where)).join(", ")}]`;
  if (typeof v === "object") {
    const model = refName(schema);
    if (!model || !s.properties) throw new Error(`${where}: an object value needs a named schema with properties`);
    const args = Object.entries(v).map(([k, x]) => {
      if (!s.properties[k]) throw new Error(`${where}: ${model} has no property ${k}`);
      return `${k}=${pyValue(spec, s.properties[k], x, where)}`;
    });
    return `ars.${model}(${args.join(", ")})`;
  }
  if (typeof v === "boolean") return v ? "True" : "False";
  return JSON.stringify(v);
}

function renderPython({ spec, o, request, baseUrl, where }) {
  const api = `${pascal(tagOf(o))}Api`;
  const args = pathParamOrder(o).map((p) => JSON.stringify(request.path[p]));
  if (request.body !== undefined) {
    // A required body is positional; an optional one is the keyword named after its model.
    const schema = o.op.requestBody.content["application/json"].schema;
    const value = pyValue(spec, schema, request.body, where);
    args.push(o.op.requestBody.required ? value : `${snake(refName(schema))}=${value}`);
  }
  for (const [k, v] of Object.entries(request.query ?? {})) args.push(`${snake(k)}=${JSON.stringify(v)}`);
  for (const [k, v] of Object.entries(request.headers ?? {})) args.push(`${snake(k)}=${JSON.stringify(v)}`);
  const name = resultName(o);
  const lines = [];
  if (needsToken(spec, o)) lines.push("import os", "");
  lines.push("import openapi_client as ars", "", `config = ars.Configuration(host="${baseUrl}")`);
  if (needsToken(spec, o)) lines.push(`config.access_token = os.environ["ARS_TOKEN"]`);
  lines.push("with ars.ApiClient(config) as api:");
  let call = `ars.${api}(api).${snake(o.operationId)}(${args.join(", ")})`;
  if (call.length > 90) call = `ars.${api}(api).${snake(o.operationId)}(\n${args.map((a) => `        ${a},`).join("\n")}\n    )`;
  lines.push(`    ${name ? `${name} = ` : ""}${call}`);
  if (name) lines.push(`    print(${name})`);
  return lines.join("\n");
}

// ---- Go (package ars generated by the README's command) --------------------------------------

function goEnumConst(typeName, value) {
  return `ars.${typeName.toUpperCase()}_${String(value).toUpperCase().replace(/[^A-Z0-9]+/g, "_")}`;
}

/** A Go expression for `v` of `schema`; statements it needs first go to `pre`. */
function goValue(spec, schema, v, pre, hint, where) {
  const s = resolve(spec, schema) ?? {};
  const name = refName(schema);
  if (s.enum && name) return goEnumConst(name, v);
  if (Array.isArray(v)) {
    const itemSchema = s.items ?? {};
    const itemName = refName(itemSchema);
    const itemType = itemName && resolve(spec, itemSchema).enum ? `ars.${itemName}` : goScalarType(resolve(spec, itemSchema), where);
    return `[]${itemType}{${v.map((x) => goValue(spec, itemSchema, x, pre, hint, where)).join(", ")}}`;
  }
  if (v && typeof v === "object") {
    if (!name || !s.properties) throw new Error(`${where}: an object value needs a named schema with properties`);
    const required = (s.required ?? []).filter((k) => k in s.properties);
    const ctorArgs = Object.keys(s.properties).filter((k) => required.includes(k)).map((k) => {
      if (!(k in v)) throw new Error(`${where}: ${name}.${k} is required`);
      return goValue(spec, s.properties[k], v[k], pre, camel(k), where);
    });
    const variable = hint;
    const setters = [];
    for (const [k, x] of Object.entries(v)) {
      if (!s.properties[k]) throw new Error(`${where}: ${name} has no property ${k}`);
      if (required.includes(k)) continue;
      setters.push(`${variable}.Set${pascal(k)}(${goValue(spec, s.properties[k], x, pre, camel(k), where)})`);
    }
    pre.push(`${variable} := ars.New${name}(${ctorArgs.join(", ")})`, ...setters);
    return `*${variable}`;
  }
  if (s.format === "date-time") {
    pre.push(`${hint}, _ := time.Parse(time.RFC3339, ${JSON.stringify(v)})`);
    return hint;
  }
  return JSON.stringify(v);
}

function goScalarType(s, where) {
  if (s.type === "string") return "string";
  if (s.type === "integer") return "int32";
  if (s.type === "boolean") return "bool";
  throw new Error(`${where}: no Go type for ${JSON.stringify(s)}`);
}

function renderGo({ spec, o, request, baseUrl, where }) {
  const pre = [];
  const service = `${pascal(tagOf(o))}API`;
  const pathArgs = pathParamOrder(o).map((p) => JSON.stringify(request.path[p]));
  let chain = `client.${service}.${pascal(o.operationId)}(${["ctx", ...pathArgs].join(", ")})`;
  const setter = (name) => (name === "type" ? "Type_" : pascal(name));
  for (const [location, inName] of [["query", "query"], ["headers", "header"]]) {
    for (const [k, v] of Object.entries(request[location] ?? {})) {
      const p = o.params.find((x) => x.in === inName && x.name === k);
      chain += `.${setter(k)}(${goValue(spec, p.schema, v, pre, camel(k), where)})`;
    }
  }
  if (request.body !== undefined) {
    const schema = o.op.requestBody.content["application/json"].schema;
    const model = refName(schema);
    if (!model) throw new Error(`${where}: the body needs a named schema`);
    chain += `.${model}(${goValue(spec, schema, request.body, pre, "body", where)})`;
  }
  const name = resultName(o);
  const ctx = needsToken(spec, o) ? `context.WithValue(context.Background(), ars.ContextAccessToken, os.Getenv("ARS_TOKEN"))` : "context.Background()";
  const body = [
    "cfg := ars.NewConfiguration()",
    `cfg.Servers = ars.ServerConfigurations{{URL: "${baseUrl}"}}`,
    "client := ars.NewAPIClient(cfg)",
    `ctx := ${ctx}`,
    "",
    ...pre,
    ...(name
      ? [`${name}, _, err := ${chain}.Execute()`, "if err != nil {", "\tpanic(err)", "}"]
      : [`res, err := ${chain}.Execute()`, "if err != nil {", "\tpanic(err)", "}", `fmt.Fprintln(os.Stderr, res.Status)`]),
  ];
  if (name) {
    if (successMedia(o)?.includes("json")) body.push(`out, _ := json.MarshalIndent(${name}, "", "  ")`, "fmt.Println(string(out))");
    else body.push(`fmt.Println(${name})`);
  }
  const text = body.join("\n");
  const sortedImports = ["context", "encoding/json", "fmt", "os", "time"].filter((pkg) => pkg === "context" || text.includes(`${pkg.split("/").pop()}.`)).map((pkg) => `"${pkg}"`);
  return [
    "package main",
    "",
    "import (",
    ...sortedImports.map((i) => `\t${i}`),
    "",
    '\tars "github.com/audit-review/ars-go"',
    ")",
    "",
    "func main() {",
    ...body.map((l) => (l ? `\t${l}` : "")),
    "}",
  ].join("\n");
}

/** The methods of @audit-review/client's AuditReviewClient: operations without one use `client.raw`. */
export function clientMethodNames(clientSource) {
  const text = readFileSync(clientSource, "utf8");
  const start = text.indexOf("export interface AuditReviewClient {");
  if (start < 0) throw new Error(`${clientSource} declares no AuditReviewClient interface`);
  const body = text.slice(start, text.indexOf("\n}", start));
  return new Set([...body.matchAll(/^ {2}(\w+)(?:<[^>]*>)?\(/gm)].map((m) => m[1]));
}
