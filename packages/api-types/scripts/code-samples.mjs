// Code samples for every public operation, from one source: openapi/code-samples.yaml says which
// request each operation's samples make; this module renders it as curl, TypeScript
// (@audit-review/client), Python (the generated `audit_review` package) and Go (the generated
// `ars` package), reading parameter and body types from the bundle itself, and merges them into
// the bundle as `x-codeSamples`. A public operation without an entry, an entry without an
// operation, or a value the renderers cannot express fails the build: the docs never lack a
// sample or show one that was not rendered from the contract.
//
// Samples run as printed: the server's address, the token and the ids a sample needs come from
// environment variables (SAMPLE_ENV and openapi/code-samples.yaml's `variables`), and values that
// must be new on every run (an Idempotency-Key, a recent `since`) are made by the sample itself.
import { readFileSync } from "node:fs";
import { parse } from "yaml";

/** The variables every sample reads: the server's address and a token. */
export const SAMPLE_ENV = { url: "ARS_API_URL", token: "ARS_TOKEN" };
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

/** Renders every operation's samples; `{name}` values become the `variables` of the source. */
export function renderAll(spec, source, { clientMethods } = {}) {
  const ops = operationsOf(spec);
  const known = new Set(ops.map((o) => o.operationId));
  const entries = source.operations ?? {};
  const missing = ops.filter((o) => !(o.operationId in entries)).map((o) => `${o.method.toUpperCase()} ${o.path} (${o.operationId})`);
  if (missing.length) throw new Error(`openapi/code-samples.yaml has no sample for: ${missing.join(", ")}`);
  const stray = Object.keys(entries).filter((id) => !known.has(id));
  if (stray.length) throw new Error(`openapi/code-samples.yaml names operations that are not public: ${stray.join(", ")}`);
  const out = {};
  for (const o of ops) {
    const where = `code sample of ${o.operationId}`;
    const request = substitute(entries[o.operationId] ?? {}, source.variables ?? {}, where);
    const ctx = { spec, o, request, clientMethods, where };
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

/** A value the sample does not spell out: read from the environment (`env`) or made when it runs (`make`). */
export class SampleVar {
  constructor(name, def, where) {
    this.name = name;
    if (def.env && /^[A-Z][A-Z0-9_]*$/.test(def.env)) this.env = def.env;
    else if (def.make === "idempotency_key" || def.make === "an_hour_ago") this.make = def.make;
    else throw new Error(`${where}: variable {${name}} needs env: NAME or make: idempotency_key | an_hour_ago`);
  }
}
const isVar = (v) => v instanceof SampleVar;

function substitute(value, variables, where) {
  if (typeof value === "string") {
    const whole = /^\{([a-z_]+)\}$/.exec(value);
    if (whole) {
      if (!variables[whole[1]]) throw new Error(`${where}: variable {${whole[1]}} is not defined`);
      return new SampleVar(whole[1], variables[whole[1]], where);
    }
    if (/\{[a-z_]+\}/.test(value)) throw new Error(`${where}: a variable must be a whole value: ${value}`);
    return value;
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, variables, where));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, variables, where)]));
  return value;
}

/** The environment variables the samples of `source` read, besides SAMPLE_ENV. */
export function sampleVariables(source) {
  return Object.entries(source.variables ?? {}).filter(([, d]) => d.env).map(([name, d]) => ({ name, env: d.env }));
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

// ---- curl --------------------------------------------------------------------------------

// What a shell makes of a generated value (GNU date; on macOS `date -u -v-1H +%Y-%m-%dT%H:%M:%SZ`).
const SHELL_MAKE = {
  idempotency_key: "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')",
  an_hour_ago: "$(date -u -d '1 hour ago' +%Y-%m-%dT%H:%M:%SZ)",
};
const shellVar = (v) => (v.env ? `$${v.env}` : SHELL_MAKE[v.make]);
// Inside double quotes only these characters are special; in an unquoted here-document, all but `"`.
const dq = (text) => String(text).replace(/[\\$`"]/g, (c) => `\\${c}`);
const hereDoc = (text) => String(text).replace(/[\\$`]/g, (c) => `\\${c}`);

function curlUrl(o, request) {
  const path = o.path.replace(/\{([^}]+)\}/g, (_, name) => {
    const v = request.path[name];
    return isVar(v) ? shellVar(v) : dq(encodeURIComponent(String(v)));
  });
  const parts = [];
  for (const [k, v] of Object.entries(request.query ?? {})) {
    for (const one of [v].flat()) parts.push(`${encodeURIComponent(k)}=${isVar(one) ? shellVar(one) : dq(encodeURIComponent(String(one)))}`);
  }
  return `"$${SAMPLE_ENV.url}${path}${parts.length ? `?${parts.join("&")}` : ""}"`;
}

function renderCurl({ spec, o, request }) {
  const lines = [`curl ${o.method === "get" ? "" : `-X ${o.method.toUpperCase()} `}${curlUrl(o, request)}`];
  if (needsToken(spec, o)) lines.push(`-H "Authorization: Bearer $${SAMPLE_ENV.token}"`);
  for (const [k, v] of Object.entries(request.headers ?? {})) lines.push(`-H "${dq(k)}: ${isVar(v) ? shellVar(v) : dq(v)}"`);
  let heredoc = null;
  if (request.body !== undefined) {
    lines.push(`-H 'Content-Type: application/json'`);
    const vars = [];
    const json = JSON.stringify(request.body, (_, v) => (isVar(v) ? `@@${vars.push(v) - 1}@@` : v), 2);
    if (vars.length) {
      // A here-document, so the shell fills in the variables and generated values.
      lines.push("-d @-");
      heredoc = hereDoc(json).replace(/@@(\d+)@@/g, (_, i) => shellVar(vars[Number(i)]));
    } else {
      lines.push(`-d '${json.replace(/'/g, "'\\''")}'`);
    }
  }
  const command = lines.join(" \\\n  ");
  return heredoc === null ? command : `${command} <<EOF\n${heredoc}\nEOF`;
}

// ---- TypeScript (@audit-review/client) ------------------------------------------------------

const TS_MAKE = { idempotency_key: "randomUUID()", an_hour_ago: "new Date(Date.now() - 3600_000).toISOString()" };

function tsValue(v, indent = "") {
  if (isVar(v)) return v.env ? `process.env.${v.env}!` : TS_MAKE[v.make];
  if (Array.isArray(v)) return `[${v.map((x) => tsValue(x, indent)).join(", ")}]`;
  if (v && typeof v === "object") {
    const inner = `${indent}  `;
    const entries = Object.entries(v).map(([k, x]) => `${inner}${/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k)}: ${tsValue(x, inner)},`);
    return `{\n${entries.join("\n")}\n${indent}}`;
  }
  return JSON.stringify(v);
}

function renderTs({ o, request, clientMethods }) {
  const lines = [];
  // The client always sends a token; operations that need none ignore it.
  lines.push(`const client = createClient({ baseUrl: process.env.${SAMPLE_ENV.url}!, token: process.env.${SAMPLE_ENV.token}! });`);
  const name = resultName(o);
  const assign = name ? `const ${name} = ` : "";
  const headers = request.headers ?? {};
  const hasMethod = !clientMethods || clientMethods.has(o.operationId);
  if (hasMethod && o.path.startsWith("/v2/")) {
    const args = pathParamOrder(o).map((p) => tsValue(request.path[p]));
    if (request.query) args.push(tsValue(request.query));
    else if (request.body !== undefined) args.push(tsValue(request.body));
    const options = [];
    for (const [k, v] of Object.entries(headers)) {
      if (k.toLowerCase() === "idempotency-key") options.push(`idempotencyKey: ${tsValue(v)}`);
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
  const imports = [];
  if (lines.some((l) => l.includes("randomUUID()"))) imports.push(`import { randomUUID } from "node:crypto";`);
  imports.push(`import { createClient } from "@audit-review/client";`);
  return [...imports, "", ...lines].join("\n");
}

// ---- Python (the generated audit_review package) --------------------------------------------

const PY_MAKE = { idempotency_key: "str(uuid.uuid4())", an_hour_ago: "datetime.now(timezone.utc) - timedelta(hours=1)" };

function pyValue(spec, schema, v, where) {
  const s = resolve(spec, schema) ?? {};
  if (isVar(v)) return v.env ? `os.environ[${JSON.stringify(v.env)}]` : PY_MAKE[v.make];
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

function renderPython({ spec, o, request, where }) {
  const api = `${pascal(tagOf(o))}Api`;
  const value = (x) => pyValue(spec, undefined, x, where);
  const args = pathParamOrder(o).map((p) => value(request.path[p]));
  if (request.body !== undefined) {
    // A required body is positional; an optional one is the keyword named after its model.
    const schema = o.op.requestBody.content["application/json"].schema;
    const body = pyValue(spec, schema, request.body, where);
    args.push(o.op.requestBody.required ? body : `${snake(refName(schema))}=${body}`);
  }
  for (const [k, v] of Object.entries(request.query ?? {})) args.push(`${snake(k)}=${value(v)}`);
  for (const [k, v] of Object.entries(request.headers ?? {})) args.push(`${snake(k)}=${value(v)}`);
  const name = resultName(o);
  const lines = [`config = ars.Configuration(host=os.environ["${SAMPLE_ENV.url}"])`];
  if (needsToken(spec, o)) lines.push(`config.access_token = os.environ["${SAMPLE_ENV.token}"]`);
  lines.push("with ars.ApiClient(config) as api:");
  let call = `ars.${api}(api).${snake(o.operationId)}(${args.join(", ")})`;
  if (call.length > 90) call = `ars.${api}(api).${snake(o.operationId)}(\n${args.map((a) => `        ${a},`).join("\n")}\n    )`;
  lines.push(`    ${name ? `${name} = ` : ""}${call}`);
  if (name) lines.push(`    print(${name})`);
  const text = lines.join("\n");
  const imports = ["import os"];
  if (text.includes("uuid.")) imports.push("import uuid");
  if (text.includes("datetime.now(")) imports.push("from datetime import datetime, timedelta, timezone");
  return [...imports, "", "import audit_review as ars", "", text].join("\n");
}

// ---- Go (package ars generated by the README's command) --------------------------------------

function goEnumConst(typeName, value) {
  return `ars.${typeName.toUpperCase()}_${String(value).toUpperCase().replace(/[^A-Z0-9]+/g, "_")}`;
}

/** A Go expression for a variable; statements it needs first go to `pre`. */
function goVar(v, pre) {
  if (v.env) return `os.Getenv(${JSON.stringify(v.env)})`;
  if (v.make === "an_hour_ago") return "time.Now().Add(-time.Hour)";
  if (!pre.includes("key := make([]byte, 16)")) pre.push("key := make([]byte, 16)", "if _, err := rand.Read(key); err != nil {", "\tpanic(err)", "}");
  return "hex.EncodeToString(key)";
}

/** A Go expression for `v` of `schema`; statements it needs first go to `pre`. */
function goValue(spec, schema, v, pre, hint, where) {
  const s = resolve(spec, schema) ?? {};
  const name = refName(schema);
  if (isVar(v)) return goVar(v, pre);
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

function renderGo({ spec, o, request, where }) {
  const pre = [];
  const service = `${pascal(tagOf(o))}API`;
  const pathArgs = pathParamOrder(o).map((p) => (isVar(request.path[p]) ? goVar(request.path[p], pre) : JSON.stringify(request.path[p])));
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
  const ctx = needsToken(spec, o) ? `context.WithValue(context.Background(), ars.ContextAccessToken, os.Getenv("${SAMPLE_ENV.token}"))` : "context.Background()";
  const body = [
    "cfg := ars.NewConfiguration()",
    `cfg.Servers = ars.ServerConfigurations{{URL: os.Getenv("${SAMPLE_ENV.url}")}}`,
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
  const sortedImports = ["context", "crypto/rand", "encoding/hex", "encoding/json", "fmt", "os", "time"].filter((pkg) => pkg === "context" || text.includes(`${pkg.split("/").pop()}.`)).map((pkg) => `"${pkg}"`);
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
