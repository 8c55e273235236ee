// Reads the actual shape of the current schema from pg_catalog (same queries on PostgreSQL and
// PGlite), in the same form as prisma-schema.ts derives the expected one. A partitioned table is
// read as its parent: its partitions (which repeat the parent's columns, keys and checks) are
// not tables of the schema.
import type { SqlExecutor } from "../../src/db/client.js";
import type { ExpectedColumn, ExpectedForeignKey, ExpectedIndex, ReferentialAction } from "./prisma-schema.js";

export interface ActualSchema {
  tables: string[];
  columns: Map<string, ExpectedColumn[]>;
  indexes: (ExpectedIndex & { method: string; partial: boolean; expressions: boolean })[];
  foreignKeys: ExpectedForeignKey[];
  constraintTypes: { table: string; name: string; type: string }[];
}

const ACTIONS: Record<string, ReferentialAction> = {
  a: "NoAction",
  r: "Restrict",
  c: "Cascade",
  n: "SetNull",
  d: "SetDefault",
};

/** int2vector / int2[] text forms ("1 2 3", "{1,2,3}") → numbers. */
function parseIntList(text: string): number[] {
  return text
    .replace(/[{}]/g, "")
    .split(/[\s,]+/)
    .filter((s) => s !== "")
    .map(Number);
}

export async function readCatalog(db: SqlExecutor): Promise<ActualSchema> {
  const tables = (
    await db.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY 1`,
    )
  ).map((r) => r.name);

  const columnRows = await db.query<{ table: string; attnum: number; name: string; type: string; nullable: boolean; default: string | null }>(
    `SELECT c.relname AS table, a.attnum::int AS attnum, a.attname AS name,
            format_type(a.atttypid, a.atttypmod) AS type, NOT a.attnotnull AS nullable,
            pg_get_expr(d.adbin, d.adrelid) AS default
       FROM pg_attribute a
       JOIN pg_class c ON c.oid = a.attrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY c.relname, a.attnum`,
  );
  const columns = new Map<string, ExpectedColumn[]>();
  const attName = new Map<string, string>();
  for (const row of columnRows) {
    const list = columns.get(row.table) ?? [];
    list.push({ name: row.name, type: row.type, nullable: row.nullable, default: row.default });
    columns.set(row.table, list);
    attName.set(`${row.table}.${row.attnum}`, row.name);
  }
  const nameOf = (table: string, attnum: number) => attName.get(`${table}.${attnum}`) ?? `#${attnum}`;

  const indexRows = await db.query<{
    name: string;
    table: string;
    unique: boolean;
    primary: boolean;
    indkey: string;
    indoption: string;
    method: string;
    partial: boolean;
    expressions: boolean;
  }>(
    `SELECT i.relname AS name, t.relname AS table, ix.indisunique AS unique, ix.indisprimary AS primary,
            ix.indkey::text AS indkey, ix.indoption::text AS indoption, am.amname AS method,
            ix.indpred IS NOT NULL AS partial, ix.indexprs IS NOT NULL AS expressions
       FROM pg_index ix
       JOIN pg_class i ON i.oid = ix.indexrelid
       JOIN pg_class t ON t.oid = ix.indrelid
       JOIN pg_am am ON am.oid = i.relam
       JOIN pg_namespace n ON n.oid = t.relnamespace
      WHERE n.nspname = current_schema() AND NOT t.relispartition
      ORDER BY 1`,
  );
  const indexes = indexRows.map((row) => {
    const keys = parseIntList(row.indkey);
    const options = parseIntList(row.indoption);
    return {
      name: row.name,
      table: row.table,
      unique: row.unique,
      primary: row.primary,
      // indoption bit 0 = DESC
      columns: keys.map((attnum, i) => ({ name: nameOf(row.table, attnum), desc: ((options[i] ?? 0) & 1) === 1 })),
      method: row.method,
      partial: row.partial,
      expressions: row.expressions,
    };
  });

  const fkRows = await db.query<{
    name: string;
    table: string;
    referenced_table: string;
    conkey: string;
    confkey: string;
    confdeltype: string;
    confupdtype: string;
  }>(
    `SELECT con.conname AS name, t.relname AS table, rt.relname AS referenced_table,
            con.conkey::text AS conkey, con.confkey::text AS confkey,
            con.confdeltype::text AS confdeltype, con.confupdtype::text AS confupdtype
       FROM pg_constraint con
       JOIN pg_class t ON t.oid = con.conrelid
       JOIN pg_class rt ON rt.oid = con.confrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace
      WHERE con.contype = 'f' AND n.nspname = current_schema() AND NOT t.relispartition
      ORDER BY 1`,
  );
  const foreignKeys = fkRows.map((row) => ({
    name: row.name,
    table: row.table,
    columns: parseIntList(row.conkey).map((k) => nameOf(row.table, k)),
    referencedTable: row.referenced_table,
    referencedColumns: parseIntList(row.confkey).map((k) => nameOf(row.referenced_table, k)),
    onDelete: ACTIONS[row.confdeltype] ?? (row.confdeltype as ReferentialAction),
    onUpdate: ACTIONS[row.confupdtype] ?? (row.confupdtype as ReferentialAction),
  }));

  const constraintTypes = await db.query<{ table: string; name: string; type: string }>(
    `SELECT t.relname AS table, con.conname AS name, con.contype::text AS type
       FROM pg_constraint con
       JOIN pg_class t ON t.oid = con.conrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace
      WHERE n.nspname = current_schema() AND NOT t.relispartition
      ORDER BY 1, 2`,
  );

  return { tables, columns, indexes, foreignKeys, constraintTypes };
}
