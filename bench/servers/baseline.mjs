// The baseline: the two list operations written with node:http + pg and nothing else. Same
// database, same rows, the product's SQL text (token lookup; one page statement of limit + 1 with
// the cursor folded in and, for question sets, the questions aggregated as JSON; the count when
// asked, through the product's own count cache), same JSON bytes: what Node, the driver and
// PostgreSQL cost on their own. Run as a child process of bench/run.mjs; prints its URL over IPC.
//
// Only what the bench sends is implemented; anything else answers 400/404.
import { createHash } from "node:crypto";
import { once } from "node:events";
import { createServer } from "node:http";
import pg from "pg";
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { DIST } from "../lib/pkg.mjs";

// the product's count policy (apps/server/src/repos/count-cache.ts), so include_total compares like with like
const { createCountCache } = await import(pathToFileURL(join(DIST, "repos", "count-cache.js")).href);
const counts = createCountCache();

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
  const { rows } = await query("SELECT id, org_id, scopes FROM api_tokens WHERE token_hash = $1 AND revoked_at IS NULL LIMIT 1", [hash]);
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
 * One keyset page newest first, as apps/server/src/repos/keyset.ts builds it: `where` holds the
 * filters over alias t ($1 = org); the cursor is a row comparison against a subselect of the
 * cursor row (one statement), looked up alone only when the page comes back empty.
 */
async function keysetPage(table, columns, where, params, page) {
  const total = page.includeTotal
    ? counts.get(`${table}\n${params[0]}\n${where}\n${JSON.stringify(params.slice(1))}`, () =>
        query(`SELECT count(*) AS n FROM ${table} t WHERE ${where}`, params).then((r) => Number(r.rows[0].n)),
      )
    : undefined;
  let sql = `SELECT ${columns} FROM ${table} t WHERE ${where}`;
  const values = [...params];
  if (page.after !== null) {
    values.push(page.after);
    sql += ` AND (t.created_at, t.id) < (SELECT c.created_at, c.id FROM ${table} c WHERE c.id = $${values.length} AND c.org_id = $1)`;
  }
  values.push(page.limit + 1);
  sql += ` ORDER BY t.created_at DESC, t.id DESC LIMIT $${values.length}`;
  const { rows } = await query(sql, values);
  if (page.after !== null && !rows.length) {
    const c = await query(`SELECT 1 AS found FROM ${table} WHERE id = $1 AND org_id = $2`, [page.after, params[0]]);
    if (!c.rows.length) throw new HttpError(400, "INVALID_CURSOR");
  }
  const hasMore = rows.length > page.limit;
  if (hasMore) rows.pop();
  return { rows, hasMore, total: await total };
}

const envelope = (data, hasMore, total) =>
  total === undefined ? { object: "list", data, has_more: hasMore } : { object: "list", data, has_more: hasMore, total_count: total };

const CE_COLUMNS = `t.id, t.org_id, t.audit_id, t.status, t.processed, t.needs_em_eval, t.em_eval_created, t.needs_icd_eval,
  t.icd_eval_created, t.marked_reviewed, t.reviewed_by, t.archived, t.redacted, t.cold, t.display_date, t.em_evaluation,
  t.icd_evaluation, t.created_at, t.updated_at`;
const CE_PARAMS = ["limit", "starting_after", "include_total", "status", "created_after", "created_before", "archived", "audit_id"];

async function listCodingEvaluations(req, q) {
  const orgId = await authenticate(req, "coding_evaluations:read");
  const page = pageParams(q, CE_PARAMS);
  const params = [orgId];
  let where = "t.org_id = $1";
  const add = (clause, value) => {
    params.push(value);
    where += ` AND t.${clause} $${params.length}`;
  };
  if (q.has("status")) add("status =", q.get("status"));
  if (q.has("audit_id")) add("audit_id =", q.get("audit_id"));
  if (q.has("archived")) add("archived =", q.get("archived") === "true");
  if (q.has("created_after")) add("created_at >", new Date(q.get("created_after")));
  if (q.has("created_before")) add("created_at <", new Date(q.get("created_before")));
  const { rows, hasMore, total } = await keysetPage("coding_evaluations", CE_COLUMNS, where, params, page);
  return envelope(rows.map(codingEvaluation), hasMore, total);
}

const QS_COLUMNS = `t.id, t.org_id, t.set_name, t.set_code, t.type, t.is_production, t.is_deleted, t.allow_doc_upload,
  t.thresholds, t.created_at, t.updated_at,
  COALESCE((SELECT json_agg(json_build_object('id', q.id, 'query', q.query, 'question_type', q.question_type,
                                              'severity', q.severity, 'remediation', q.remediation) ORDER BY q.position)
              FROM questions q WHERE q.question_set_id = t.id AND q.is_deleted = false), '[]'::json) AS questions`;

async function listQuestionSets(req, q) {
  const orgId = await authenticate(req, "question_sets:read");
  const page = pageParams(q, ["limit", "starting_after", "include_total", "is_deleted"]);
  const { rows, hasMore, total } = await keysetPage("question_sets", QS_COLUMNS, "t.org_id = $1 AND t.is_deleted = $2", [orgId, q.get("is_deleted") === "true"], page);
  return envelope(rows.map((s) => questionSet(s, s.questions)), hasMore, total);
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
