// The baseline: the two list operations written with node:http + pg and nothing else. Same
// database, same rows, same SQL semantics as the product (token lookup, cursor lookup, keyset
// page of limit + 1, count when asked), same JSON bytes: what Node, the driver and PostgreSQL
// cost on their own. Run as a child process of bench/run.mjs; prints its URL over IPC.
//
// Only what the bench sends is implemented; anything else answers 400/404.
import { createHash } from "node:crypto";
import { once } from "node:events";
import { createServer } from "node:http";
import pg from "pg";

const DATABASE_URL = process.env.DATABASE_URL;
const POOL_SIZE = Number(process.env.BENCH_POOL_SIZE ?? 10); // the product's pool size
// Unnamed statements by default, as adapter-pg sends them: the ratio then measures the stack, not
// prepared statements (BENCH_BASELINE_PREPARED=true for named, server-side prepared ones).
const PREPARED = process.env.BENCH_BASELINE_PREPARED === "true";

// DATE stays 'YYYY-MM-DD' (what the product prints); timestamptz → Date, jsonb → parsed: as Prisma.
const types = {
  getTypeParser: (oid, format) => (oid === 1082 ? (text) => text : pg.types.getTypeParser(oid, format)),
};
const pool = new pg.Pool({ connectionString: DATABASE_URL, max: POOL_SIZE, types });
pool.on("error", () => undefined);

// Named statements (when PREPARED): one per distinct SQL text.
const names = new Map();
function query(text, values) {
  if (!PREPARED) return pool.query({ text, values });
  let name = names.get(text);
  if (!name) names.set(text, (name = `b${names.size}`));
  return pool.query({ name, text, values });
}

const iso = (d) => d.toISOString();

// Key order exactly as apps/server/src/presenters/*.ts.
function codingEvaluation(e) {
  return {
    id: e.id,
    object: "coding_evaluation",
    org_id: e.org_id,
    audit_id: e.audit_id,
    status: e.status,
    processed: e.processed,
    needs_em_eval: e.needs_em_eval,
    em_eval_created: e.em_eval_created,
    needs_icd_eval: e.needs_icd_eval,
    icd_eval_created: e.icd_eval_created,
    marked_reviewed: e.marked_reviewed,
    reviewed_by: e.reviewed_by,
    archived: e.archived,
    redacted: e.redacted,
    cold: e.cold,
    display_date: e.display_date,
    em_evaluation: e.em_evaluation,
    icd_evaluation: e.icd_evaluation,
    created_at: iso(e.created_at),
    updated_at: iso(e.updated_at),
  };
}

function question(q) {
  return { id: q.id, object: "question", query: q.query, question_type: q.question_type, severity: q.severity, remediation: q.remediation };
}

function questionSet(s, questions) {
  return {
    id: s.id,
    object: "question_set",
    org_id: s.org_id,
    set_name: s.set_name,
    set_code: s.set_code,
    type: s.type,
    is_production: s.is_production,
    is_deleted: s.is_deleted,
    allow_doc_upload: s.allow_doc_upload,
    thresholds: s.thresholds,
    questions: questions.map(question),
    created_at: iso(s.created_at),
    updated_at: iso(s.updated_at),
  };
}

class HttpError extends Error {
  constructor(status, code) {
    super(code);
    this.status = status;
  }
}

async function authenticate(req, scope) {
  const header = req.headers.authorization ?? "";
  if (!header.startsWith("Bearer ")) throw new HttpError(401, "UNAUTHENTICATED");
  const hash = createHash("sha256").update(header.slice(7)).digest("hex");
  const { rows } = await query("SELECT org_id, scopes FROM api_tokens WHERE token_hash = $1 AND revoked_at IS NULL LIMIT 1", [hash]);
  if (!rows.length) throw new HttpError(401, "UNAUTHENTICATED");
  if (!rows[0].scopes.includes(scope)) throw new HttpError(403, "INSUFFICIENT_SCOPE");
  return rows[0].org_id;
}

function pageParams(q, allowed) {
  for (const key of q.keys()) if (!allowed.includes(key)) throw new HttpError(400, "VALIDATION_ERROR");
  const limit = q.has("limit") ? Number(q.get("limit")) : 10;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new HttpError(400, "VALIDATION_ERROR");
  if (q.has("ending_before")) throw new HttpError(400, "VALIDATION_ERROR"); // not used by the bench
  return { limit, after: q.get("starting_after"), includeTotal: q.get("include_total") === "true" };
}

/**
 * One keyset page newest first: `where` holds the filters ($1 = org), the cursor row bounds it
 * (the same redundant created_at bound as the product, so the index scan starts at the cursor).
 */
async function keysetPage(table, columns, where, params, page) {
  const total = page.includeTotal
    ? query(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`, params).then((r) => r.rows[0].n)
    : undefined;
  let sql = `SELECT ${columns} FROM ${table} WHERE ${where}`;
  const values = [...params];
  if (page.after !== null) {
    const c = await query(`SELECT id, created_at FROM ${table} WHERE id = $1 AND org_id = $2`, [page.after, params[0]]);
    if (!c.rows.length) throw new HttpError(400, "INVALID_CURSOR");
    values.push(c.rows[0].created_at, c.rows[0].id);
    const t = `$${values.length - 1}`;
    const i = `$${values.length}`;
    sql += ` AND created_at <= ${t} AND (created_at < ${t} OR (created_at = ${t} AND id < ${i}))`;
  }
  values.push(page.limit + 1);
  sql += ` ORDER BY created_at DESC, id DESC LIMIT $${values.length}`;
  const { rows } = await query(sql, values);
  const hasMore = rows.length > page.limit;
  if (hasMore) rows.pop();
  return { rows, hasMore, total: await total };
}

const envelope = (data, hasMore, total) =>
  total === undefined ? { object: "list", data, has_more: hasMore } : { object: "list", data, has_more: hasMore, total_count: total };

const CE_COLUMNS = `id, org_id, audit_id, status, processed, needs_em_eval, em_eval_created, needs_icd_eval, icd_eval_created,
  marked_reviewed, reviewed_by, archived, redacted, cold, display_date, em_evaluation, icd_evaluation, created_at, updated_at`;
const CE_PARAMS = ["limit", "starting_after", "include_total", "status", "created_after", "created_before", "archived", "audit_id"];

async function listCodingEvaluations(req, q) {
  const orgId = await authenticate(req, "coding_evaluations:read");
  const page = pageParams(q, CE_PARAMS);
  const params = [orgId];
  let where = "org_id = $1";
  const add = (clause, value) => {
    params.push(value);
    where += ` AND ${clause} $${params.length}`;
  };
  if (q.has("status")) add("status =", q.get("status"));
  if (q.has("audit_id")) add("audit_id =", q.get("audit_id"));
  if (q.has("archived")) add("archived =", q.get("archived") === "true");
  if (q.has("created_after")) add("created_at >", new Date(q.get("created_after")));
  if (q.has("created_before")) add("created_at <", new Date(q.get("created_before")));
  const { rows, hasMore, total } = await keysetPage("coding_evaluations", CE_COLUMNS, where, params, page);
  return envelope(rows.map(codingEvaluation), hasMore, total);
}

const QS_COLUMNS = "id, org_id, set_name, set_code, type, is_production, is_deleted, allow_doc_upload, thresholds, created_at, updated_at";

async function listQuestionSets(req, q) {
  const orgId = await authenticate(req, "question_sets:read");
  const page = pageParams(q, ["limit", "starting_after", "include_total", "is_deleted"]);
  const { rows, hasMore, total } = await keysetPage("question_sets", QS_COLUMNS, "org_id = $1 AND is_deleted = $2", [orgId, q.get("is_deleted") === "true"], page);
  const bySet = new Map(rows.map((s) => [s.id, []]));
  if (rows.length) {
    const qs = await query(
      `SELECT id, question_set_id, query, question_type, severity, remediation FROM questions
        WHERE question_set_id = ANY($1::uuid[]) AND is_deleted = false ORDER BY question_set_id, position`,
      [rows.map((s) => s.id)],
    );
    for (const row of qs.rows) bySet.get(row.question_set_id).push(row);
  }
  return envelope(rows.map((s) => questionSet(s, bySet.get(s.id))), hasMore, total);
}

const routes = { "/v2/coding_evaluations": listCodingEvaluations, "/v2/question_sets": listQuestionSets };

const server = createServer(async (req, res) => {
  const qIndex = req.url.indexOf("?");
  const path = qIndex < 0 ? req.url : req.url.slice(0, qIndex);
  const route = req.method === "GET" ? routes[path] : undefined;
  let status = 200;
  let body;
  try {
    if (!route) throw new HttpError(404, "NOT_FOUND");
    body = JSON.stringify(await route(req, new URLSearchParams(qIndex < 0 ? "" : req.url.slice(qIndex + 1))));
  } catch (err) {
    status = err instanceof HttpError ? err.status : 500;
    body = JSON.stringify({ status, code: err instanceof HttpError ? err.message : "INTERNAL_ERROR" });
    if (status === 500) console.error(err);
  }
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) });
  res.end(body);
});

server.listen(0, "127.0.0.1");
await once(server, "listening");
await pool.query("SELECT 1");
const url = `http://127.0.0.1:${server.address().port}`;
if (process.send) process.send({ ready: true, url, pid: process.pid });
else console.log(url);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  // in-flight requests finish first (as the product's close() does), then the pool ends
  setTimeout(() => process.exit(1), 10_000).unref();
  server.close(() => pool.end().finally(() => process.exit(0)));
  server.closeIdleConnections();
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.on("disconnect", stop);
