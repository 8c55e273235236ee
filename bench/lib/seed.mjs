// The bench database: created, migrated (with the server's own migrator) and seeded once, then
// reused while its row counts are right. Seeding is one INSERT … SELECT … FROM generate_series
// per table: no request per row, no row built in JavaScript.
import pg from "pg";

export const ORG_A = "bench-org-a";
export const ORG_B = "bench-org-b";

/** What a seeded database holds. Org B makes tenancy real: its rows share every index with A's. */
// BENCH_SCALE (default 1) shrinks everything for a quick smoke run of the bench itself.
// BENCH_SETS_SCALE (default BENCH_SCALE) scales the question sets alone: the guard keeps a full
// page after its deep cursor on otherwise small data.
const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const SETS_SCALE = Number(process.env.BENCH_SETS_SCALE ?? SCALE);
const scaled = (n, scale = SCALE) => Math.max(1, Math.round(n * scale));
export const VOLUME = {
  a: { evaluations: scaled(1_000_000), sets: scaled(10_000, SETS_SCALE) },
  b: { evaluations: scaled(100_000), sets: scaled(1_000, SETS_SCALE) },
  /** created_at spans this many days, ending at seed time */
  days: 730,
};

const log = (msg) => console.log(`[seed] ${msg}`);

export function withDatabase(url, name) {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Creates the database (dropping it first with `reseed`). Returns true when it was (re)created. */
export async function ensureDatabase(adminUrl, name, { reseed }) {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${name}`);
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    if (reseed) {
      log(`dropping database ${name}`);
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
    const { rowCount } = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (rowCount) return false;
    log(`creating database ${name}`);
    await admin.query(`CREATE DATABASE ${name}`);
    return true;
  } finally {
    await admin.end();
  }
}

/** Org ids by name, creating the orgs through the server's own createOrg when missing. */
export async function ensureOrgs(server, db) {
  const ids = {};
  for (const [key, name] of [["a", ORG_A], ["b", ORG_B]]) {
    const rows = await db.query("SELECT id FROM orgs WHERE name = $1 ORDER BY created_at LIMIT 1", [name]);
    ids[key] = rows[0]?.id ?? (await server.createOrg(db, { name })).id;
  }
  return ids;
}

async function counts(client, orgs) {
  const q = async (sql, org) => Number((await client.query(sql, [org])).rows[0].n);
  const out = {};
  for (const key of ["a", "b"]) {
    out[key] = {
      evaluations: await q("SELECT count(*) AS n FROM coding_evaluations WHERE org_id = $1", orgs[key]),
      sets: await q("SELECT count(*) AS n FROM question_sets WHERE org_id = $1", orgs[key]),
      questions: await q("SELECT count(*) AS n FROM questions WHERE org_id = $1", orgs[key]),
    };
  }
  return out;
}

function seeded(c) {
  return ["a", "b"].every(
    (k) => c[k].evaluations === VOLUME[k].evaluations && c[k].sets === VOLUME[k].sets && c[k].questions >= VOLUME[k].sets * 18,
  );
}

// A UUIDv7 whose 48-bit millisecond prefix is `ts` (column `h` = 12 hex digits of it) and whose
// other bits come from gen_random_uuid(): id order follows created_at, as the server's newId().
const uuid7 = (h) => `(substr(${h}, 1, 8) || '-' || substr(${h}, 9, 4) || '-7' || substr(gen_random_uuid()::text, 16))`;
const msHex = (ts) => `lpad(to_hex(floor(extract(epoch FROM ${ts}) * 1000)::bigint), 12, '0')`;
const pick = (arr, r) => `(${arr})[1 + floor(${r} * array_length(${arr}, 1))::int]`;
const sqlText = (s) => `'${s.replaceAll("'", "''")}'`;
const textArray = (xs) => `(ARRAY[${xs.map(sqlText).join(", ")}]::text[])`;

const PROBLEMS = [
  ["chronic_illness_with_exacerbation", "COPD with acute exacerbation"],
  ["chronic_illness_stable", "Type 2 diabetes mellitus, controlled on metformin"],
  ["acute_uncomplicated_illness", "Acute maxillary sinusitis"],
  ["acute_illness_with_systemic_symptoms", "Community-acquired pneumonia with fever"],
  ["chronic_illness_stable", "Essential hypertension, at goal"],
  ["undiagnosed_new_problem", "Chest pain of uncertain etiology"],
  ["self_limited_problem", "Contact dermatitis of the left forearm"],
  ["chronic_illness_with_exacerbation", "Congestive heart failure with worsening edema"],
];
const DATA = [
  ["review_external_notes", "Reviewed discharge summary from St. Mary's Hospital"],
  ["order_unique_test", "Ordered comprehensive metabolic panel"],
  ["review_unique_test", "Reviewed chest X-ray result"],
  ["independent_historian", "History obtained from daughter due to dementia"],
  ["independent_interpretation", "Independent interpretation of ECG: normal sinus rhythm"],
  ["discussion_with_external_physician", "Discussed management with cardiology"],
];
const RISK = [
  ["prescription_drug_management", "Started lisinopril 10 mg daily"],
  ["prescription_drug_management", "Adjusted basal insulin dosing"],
  ["decision_regarding_hospitalization", "Decision to admit for observation"],
  ["otc_drugs", "Recommended acetaminophen as needed"],
  ["social_determinants_of_health", "Treatment limited by lack of transportation"],
  ["minor_surgery_with_risk_factors", "Decision for punch biopsy"],
];
const ICD = [
  ["E11.65", "HCC37"],
  ["I10", null],
  ["J44.1", "HCC280"],
  ["I50.9", "HCC226"],
  ["N18.4", "HCC327"],
  ["E78.5", null],
  ["F33.1", "HCC155"],
  ["M17.11", null],
];
const CRITERIA = ["MEAT - Monitor", "MEAT - Evaluate", "MEAT - Assess", "MEAT - Treat"];
const CONTEXTS = [
  "Patient's A1c reviewed, 8.2%.",
  "Blood pressure 138/86, continue current regimen.",
  "Spirometry reviewed, FEV1 54% predicted.",
  "Weight up 3 lb, furosemide increased to 40 mg.",
  "eGFR 24, referred to nephrology.",
  "LDL 142 on atorvastatin; dose increased.",
  "PHQ-9 score 14, continue sertraline.",
  "Knee pain limits ambulation; steroid injection given.",
];
const FLAGS = ["missing_ros", "missing_hpi", "cloned_note", "time_not_documented", "conflicting_diagnoses"];
const CODES = ["99212", "99213", "99214", "99215"];
const LEVELS = ["straightforward", "low", "moderate", "high"];
const REVIEWERS = ["a.nguyen@example-health.org", "m.garcia@example-health.org", "j.smith@example-health.org", "k.patel@example-health.org"];

/** jsonb array of 1 + floor(r * n) findings drawn from `pool`; `h` is the row's ms prefix. */
function findings(pool, r, n, h) {
  const cats = textArray(pool.map((p) => p[0]));
  const descs = textArray(pool.map((p) => p[1]));
  return `(SELECT coalesce(jsonb_agg(jsonb_build_object('id', ${uuid7(h)}, 'category', ${cats}[x.j], 'description', ${descs}[x.j])), '[]'::jsonb)
      FROM (SELECT 1 + floor(random() * ${pool.length})::int AS j FROM generate_series(1, floor(${r} * ${n + 1})::int)) x)`;
}

export function codingEvaluationsSql() {
  const icdCodes = textArray(ICD.map((c) => c[0]));
  const hccCodes = `(ARRAY[${ICD.map((c) => (c[1] ? sqlText(c[1]) : "NULL")).join(", ")}]::text[])`;
  return `
INSERT INTO coding_evaluations (id, org_id, audit_id, status, processed, needs_em_eval, em_eval_created, needs_icd_eval,
  icd_eval_created, marked_reviewed, reviewed_by, archived, redacted, cold, display_date, em_evaluation, icd_evaluation,
  created_at, updated_at)
SELECT
  ${uuid7("k.h")}::uuid,
  $1,
  CASE WHEN t.ra < 0.97 THEN ${uuid7("k.h")}::uuid END,
  k.status,
  k.status IN ('completed', 'failed'),
  t.rn < 0.95,
  k.has_em,
  t.rn < 0.90,
  k.has_icd,
  k.reviewed,
  CASE WHEN k.reviewed THEN ${pick(textArray(REVIEWERS), "t.rr")} END,
  t.rc < 0.10,
  t.rx < 0.02,
  t.ts < now() - interval '400 days',
  (t.ts - floor(t.rd * 8) * interval '1 day')::date,
  CASE WHEN k.has_em THEN jsonb_build_object(
    'id', ${uuid7("k.h")},
    'object', 'em_evaluation',
    'coding_status', CASE WHEN e.r1 < 0.95 THEN 'codable' ELSE 'uncodable' END,
    'uncodable_reason', CASE WHEN e.r1 >= 0.95 THEN 'Medical decision making is not documented' END,
    'score', round((55 + e.r2 * 45)::numeric, 1)::float8,
    'flags', CASE WHEN e.r3 < 0.6 THEN '[]'::jsonb ELSE jsonb_build_array(${pick(textArray(FLAGS), "e.r4")}) END,
    'base_code_aligned', e.r5 < 0.7,
    'add_on_codes_aligned', e.r6 < 0.9,
    'problems_level', ${pick(textArray(LEVELS), "e.r7")},
    'data_level', ${pick(textArray(LEVELS), "e.r8")},
    'risk_level', ${pick(textArray(LEVELS), "e.r9")},
    'mdm_level', ${pick(textArray(LEVELS), "e.r7")},
    'time_based', e.r10 < 0.2,
    'encounter_time_minutes', CASE WHEN e.r10 < 0.2 THEN 10 + floor(e.r2 * 50)::int END,
    'upcoded', e.r5 >= 0.7 AND e.r6 < 0.5,
    'downcoded', e.r5 >= 0.7 AND e.r6 >= 0.5,
    'submitted_base_code', ${pick(textArray(CODES), "e.r8")},
    'recommended_base_code', ${pick(textArray(CODES), "CASE WHEN e.r5 < 0.7 THEN e.r8 ELSE e.r9 END")},
    'submitted_add_on_codes', CASE WHEN e.r3 < 0.15 THEN '["99417"]'::jsonb ELSE '[]'::jsonb END,
    'recommended_add_on_codes', CASE WHEN e.r3 < 0.10 THEN '["99417"]'::jsonb ELSE '[]'::jsonb END,
    'problems', ${findings(PROBLEMS, "(0.34 + e.r4 * 0.66)", 3, "k.h")},
    'data', ${findings(DATA, "e.r9", 3, "k.h")},
    'risk', ${findings(RISK, "(0.5 + e.r1 * 0.5)", 2, "k.h")}
  ) END,
  CASE WHEN k.has_icd THEN jsonb_build_object(
    'id', ${uuid7("k.h")},
    'object', 'icd_evaluation',
    'score', round((60 + e.r3 * 40)::numeric, 1)::float8,
    'flags', CASE WHEN e.r6 < 0.8 THEN '[]'::jsonb ELSE '["unsupported_hcc"]'::jsonb END,
    'hcc_model_name', 'CMS-HCC V28',
    'icd_codes', (SELECT coalesce(jsonb_agg(jsonb_build_object(
        'icd_code', ${icdCodes}[c.j],
        'hcc_code', ${hccCodes}[c.j],
        'criteria', (SELECT jsonb_agg(jsonb_build_object(
            'id', ${uuid7("k.h")},
            'criteria_name', ${textArray(CRITERIA)}[1 + (c.j + m) % ${CRITERIA.length}],
            'criteria_context', ${textArray(CONTEXTS)}[c.j],
            'is_criteria_met', random() < 0.85))
          FROM generate_series(1, 1 + (c.j + c.n) % 3) m)
      )), '[]'::jsonb)
      FROM (SELECT 1 + floor(random() * ${ICD.length})::int AS j, n FROM generate_series(1, 1 + floor(e.r2 * 4)::int) n) c)
  ) END,
  t.ts,
  t.ts + (CASE WHEN k.status IN ('completed', 'failed') THEN 1 + floor(t.rd * 600) ELSE 0 END) * interval '1 second'
FROM generate_series($5::int, $2::int) AS g(i)
CROSS JOIN LATERAL (
  SELECT $3::timestamptz + ((g.i - 1) * $4::float8 + floor(random() * $4::float8 * 0.9)) * interval '1 millisecond' AS ts,
         random() AS rs, random() AS ra, random() AS rn, random() AS rr, random() AS rc, random() AS rx, random() AS rd
) t
CROSS JOIN LATERAL (
  SELECT ${msHex("t.ts")} AS h,
         s.status,
         s.status = 'completed' OR (s.status = 'processing' AND t.rn < 0.5) AS has_em,
         s.status = 'completed' AND t.rn < 0.90 AS has_icd,
         s.status = 'completed' AND t.rr < 0.3 AS reviewed
  FROM (SELECT CASE WHEN t.rs < 0.80 THEN 'completed' WHEN t.rs < 0.88 THEN 'pending'
                    WHEN t.rs < 0.93 THEN 'processing' ELSE 'failed' END AS status) s
) k
CROSS JOIN LATERAL (
  SELECT random() + 0 * t.rs AS r1, random() AS r2, random() AS r3, random() AS r4, random() AS r5,
         random() AS r6, random() AS r7, random() AS r8, random() AS r9, random() AS r10
) e`;
}

const SET_NAMES = [
  "ED documentation review", "Inpatient H&P completeness", "Outpatient E/M compliance", "Discharge summary quality",
  "Operative note review", "Telehealth visit compliance", "Annual wellness visit", "Behavioral health intake",
  "Radiology report quality", "Sepsis bundle documentation",
];
const SET_CODES = ["ED-DOC", "IP-HP", "OP-EM", "DS-QUAL", "OR-NOTE", "TH-COMP", "AWV", "BH-INT", "RAD-QUAL", "SEP-BND"];
const QUESTIONS = [
  "Is the patient's chief complaint documented?",
  "Is the history of present illness documented with at least four elements?",
  "Is a review of systems documented?",
  "Are current medications reconciled?",
  "Are allergies documented?",
  "Is the physical examination documented for each affected body area?",
  "Is the medical decision making documented?",
  "Is each diagnosis supported by documentation?",
  "Are ordered tests documented with their indication?",
  "Are test results reviewed and documented?",
  "Is the treatment plan documented?",
  "Is patient education documented?",
  "Is the follow-up interval documented?",
  "Is the total time documented when billing by time?",
  "Is the note signed and dated by the provider?",
  "Is informed consent documented for procedures?",
  "Are social determinants of health documented?",
  "Is the level of service supported by the documentation?",
  "Is the attending attestation present for resident notes?",
  "Which template was used for this note?",
];
const REMEDIATIONS = [
  "Document the chief complaint in the HPI section.",
  "Add the missing elements to the history of present illness.",
  "Reconcile medications with the patient and update the list.",
  "Link each diagnosis to supporting findings in the assessment.",
  "Record the total time spent on the date of the encounter.",
];

function questionSetsSql() {
  return `
INSERT INTO question_sets (id, org_id, set_name, set_code, type, is_production, is_deleted, allow_doc_upload, thresholds, created_at, updated_at)
SELECT
  ${uuid7("k.h")}::uuid,
  $1,
  ${textArray(SET_NAMES)}[k.n] || ' v' || (1 + g.i % 5),
  ${textArray(SET_CODES)}[k.n] || '-' || lpad(g.i::text, 5, '0'),
  (ARRAY['clinical_documentation', 'coding', 'compliance', 'quality', NULL])[1 + floor(t.r1 * 5)::int],
  t.r2 < 0.7,
  t.r3 < 0.02,
  t.r4 < 0.5,
  CASE WHEN t.r4 < 0.8
    THEN '[{"label": "pass", "min_score": 80}, {"label": "review", "min_score": 60}, {"label": "fail", "min_score": 0}]'::jsonb
    ELSE '[{"label": "pass", "min_score": 90}, {"label": "fail", "min_score": 0}]'::jsonb END,
  t.ts,
  t.ts + floor(t.r5 * 30) * interval '1 day'
FROM generate_series(1, $2::int) AS g(i)
CROSS JOIN LATERAL (
  SELECT $3::timestamptz + ((g.i - 1) * $4::float8 + floor(random() * $4::float8 * 0.9)) * interval '1 millisecond' AS ts,
         random() AS r1, random() AS r2, random() AS r3, random() AS r4, random() AS r5, random() AS r6
) t
CROSS JOIN LATERAL (SELECT ${msHex("t.ts")} AS h, 1 + floor(t.r6 * ${SET_NAMES.length})::int AS n) k`;
}

function questionsSql() {
  return `
INSERT INTO questions (id, org_id, question_set_id, position, query, question_type, severity, remediation, is_deleted, created_at, updated_at)
SELECT
  ${uuid7(msHex("qs.created_at"))}::uuid,
  qs.org_id,
  qs.id,
  p.pos,
  ${textArray(QUESTIONS)}[1 + (p.pos + get_byte(uuid_send(qs.id), 14)) % ${QUESTIONS.length}],
  CASE WHEN (p.pos + get_byte(uuid_send(qs.id), 14)) % ${QUESTIONS.length} = ${QUESTIONS.length - 1} THEN 'informational'
       ELSE (ARRAY['yes_no', 'yes_no', 'yes_no', 'multiple_choice', 'free_text', NULL])[1 + floor(r.r1 * 6)::int] END,
  (ARRAY['low', 'medium', 'high', 'critical', NULL])[1 + floor(r.r2 * 5)::int],
  CASE WHEN r.r3 < 0.7 THEN ${textArray(REMEDIATIONS)}[1 + floor(r.r3 / 0.7 * ${REMEDIATIONS.length})::int] END,
  r.r4 < 0.03,
  qs.created_at,
  qs.updated_at
FROM question_sets qs
CROSS JOIN LATERAL generate_series(0, 17 + get_byte(uuid_send(qs.id), 15) % 5) AS p(pos)
CROSS JOIN LATERAL (SELECT random() + 0 * p.pos AS r1, random() AS r2, random() AS r3, random() AS r4) r
WHERE qs.org_id = $1`;
}

/**
 * Makes sure the bench database holds exactly the seeded volume. Returns whether it seeded.
 * `db` is the server's Database (for createOrg); SQL goes through a pg client of our own.
 */
export async function ensureSeeded({ url, orgs, force }) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const before = await counts(client, orgs);
    if (!force && seeded(before)) {
      log(`already seeded: org A ${before.a.evaluations} evaluations, ${before.a.sets} sets, ${before.a.questions} questions; org B ${before.b.evaluations}/${before.b.sets}`);
      return false;
    }
    log("seeding (one INSERT … SELECT … generate_series per table; a few minutes on 2 cores)");
    await client.query(
      "TRUNCATE webhook_delivery_attempts, webhook_deliveries, events, webhook_endpoints, questions, question_sets, coding_evaluations",
    );
    const extra = [new pg.Client({ connectionString: url })];
    await Promise.all(extra.map((c) => c.connect()));
    for (const c of [client, ...extra]) {
      // JIT compiling this statement costs ~1 s per call and saves nothing
      await c.query("SET jit = off; SET synchronous_commit = off; SET maintenance_work_mem = '512MB'; SET work_mem = '64MB'");
    }
    const spanMs = VOLUME.days * 86_400_000;
    const start = new Date(Math.floor(Date.now() / 1000) * 1000 - spanMs);
    for (const key of ["a", "b"]) {
      const v = VOLUME[key];
      let t0 = Date.now();
      // The evaluations in chunks of 100,000 rows on two connections (two cores), with progress.
      const chunks = [];
      for (let lo = 1; lo <= v.evaluations; lo += 100_000) chunks.push([lo, Math.min(v.evaluations, lo + 99_999)]);
      let done = 0;
      const workers = [client, ...extra].map(async (c) => {
        for (let chunk = chunks.shift(); chunk; chunk = chunks.shift()) {
          await c.query(codingEvaluationsSql(), [orgs[key], chunk[1], start, spanMs / v.evaluations, chunk[0]]);
          done += chunk[1] - chunk[0] + 1;
          if (v.evaluations > 100_000) log(`org ${key.toUpperCase()}: ${done}/${v.evaluations} coding evaluations`);
        }
      });
      await Promise.all(workers);
      log(`org ${key.toUpperCase()}: ${v.evaluations} coding evaluations in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      t0 = Date.now();
      await client.query(questionSetsSql(), [orgs[key], v.sets, start, spanMs / v.sets]);
      await client.query(questionsSql(), [orgs[key]]);
      log(`org ${key.toUpperCase()}: ${v.sets} question sets with their questions in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
    const t0 = Date.now();
    await client.query("VACUUM (ANALYZE) coding_evaluations, question_sets, questions");
    log(`vacuum analyze in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    await Promise.all(extra.map((c) => c.end()));
    const after = await counts(client, orgs);
    if (!seeded(after)) throw new Error(`seed produced unexpected counts: ${JSON.stringify(after)}`);
    return true;
  } finally {
    await client.end();
  }
}

/** Facts about the seeded data that the scenarios need (cursors, filter values). */
export async function seedFacts(url, orgs) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const one = async (sql, params) => (await client.query(sql, params)).rows[0];
    const deep = await one(
      "SELECT id FROM coding_evaluations WHERE org_id = $1 ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1",
      [orgs.a, Math.round(VOLUME.a.evaluations * 0.9) - 1],
    );
    const deepSet = await one(
      "SELECT id FROM question_sets WHERE org_id = $1 AND is_deleted = false ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1",
      [orgs.a, Math.round(VOLUME.a.sets * 0.9) - 1],
    );
    const newest = await one("SELECT max(created_at) AS t FROM coding_evaluations WHERE org_id = $1", [orgs.a]);
    // created_after one year before the newest row: about half of the org's rows match
    const createdAfter = new Date(newest.t.getTime() - 365 * 86_400_000).toISOString();
    const stats = await one(
      `SELECT pg_size_pretty(pg_total_relation_size('coding_evaluations')) AS ce_size,
              pg_size_pretty(pg_total_relation_size('questions') + pg_total_relation_size('question_sets')) AS qs_size,
              (SELECT avg(pg_column_size(em_evaluation) + pg_column_size(icd_evaluation))::int
                 FROM (SELECT em_evaluation, icd_evaluation FROM coding_evaluations
                        WHERE org_id = $1 AND status = 'completed' LIMIT 1000) s) AS findings_bytes`,
      [orgs.a],
    );
    // any live set with questions, for the dispatcher's events
    const set = await one(
      `SELECT qs.id, json_agg(json_build_object('id', q.id, 'query', q.query, 'question_type', q.question_type) ORDER BY q.position) AS questions
         FROM question_sets qs JOIN questions q ON q.question_set_id = qs.id AND NOT q.is_deleted
        WHERE qs.org_id = $1 AND NOT qs.is_deleted GROUP BY qs.id ORDER BY max(qs.created_at) DESC LIMIT 1`,
      [orgs.a],
    );
    return { deepEvaluationId: deep.id, deepSetId: deepSet.id, createdAfter, stats, eventSet: set };
  } finally {
    await client.end();
  }
}
