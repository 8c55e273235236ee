// Reads prisma/schema.prisma and derives the PostgreSQL shape `prisma migrate` would create for it
// (column types, nullability, defaults, constraint and index names), so a test can compare that
// with the migrated database. Only the schema features this project uses are understood; anything
// else throws, so a new feature cannot be silently ignored by the comparison.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { findMigrationsDir } from "../../src/db/migrate.js";

export interface SchemaField {
  name: string;
  type: string;
  optional: boolean;
  list: boolean;
  attributes: string[];
}

export interface SchemaModel {
  name: string;
  table: string;
  fields: SchemaField[];
  blockAttributes: string[];
}

export interface ExpectedColumn {
  name: string;
  /** As `format_type()` prints it. */
  type: string;
  nullable: boolean;
  /** As `pg_get_expr(adbin)` prints it, or null. */
  default: string | null;
}

export interface ExpectedIndex {
  name: string;
  table: string;
  unique: boolean;
  primary: boolean;
  columns: { name: string; desc: boolean }[];
  /** `where: raw("…")` (preview feature partialIndexes): the index covers only the rows it names */
  partial: boolean;
}

export interface ExpectedForeignKey {
  name: string;
  table: string;
  columns: string[];
  referencedTable: string;
  referencedColumns: string[];
  onDelete: ReferentialAction;
  onUpdate: ReferentialAction;
}

export type ReferentialAction = "Cascade" | "Restrict" | "NoAction" | "SetNull" | "SetDefault";

export interface ExpectedTable {
  name: string;
  model: string;
  columns: ExpectedColumn[];
}

export interface ExpectedSchema {
  tables: ExpectedTable[];
  indexes: ExpectedIndex[];
  foreignKeys: ExpectedForeignKey[];
}

const POSTGRES_MAX_IDENTIFIER = 63;

export function schemaPath(): string {
  return join(findMigrationsDir(), "..", "schema.prisma");
}

function stripComments(source: string): string {
  return source
    .split("\n")
    .map((line) => {
      // `//` inside a string literal (e.g. a URL default) is not a comment.
      let inString = false;
      for (let i = 0; i < line.length; i++) {
        const ch = line[i];
        if (ch === '"' && line[i - 1] !== "\\") inString = !inString;
        if (!inString && ch === "/" && line[i + 1] === "/") return line.slice(0, i);
      }
      return line;
    })
    .join("\n");
}

/** Splits `@a @b(x, y) @c.d(1)` into attributes, respecting parentheses. */
function splitAttributes(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of text.trim()) {
    if (ch === "@" && depth === 0 && current.trim() !== "" && !current.endsWith("@")) {
      out.push(current.trim());
      current = "";
    }
    if (ch === "(" || ch === "[") depth++;
    if (ch === ")" || ch === "]") depth--;
    current += ch;
  }
  if (current.trim() !== "") out.push(current.trim());
  return out;
}

export function parseSchema(source: string): SchemaModel[] {
  const text = stripComments(source);
  const models: SchemaModel[] = [];
  const blockPattern = /^\s*(model|enum|type|view)\s+(\w+)\s*\{([\s\S]*?)^\s*\}/gm;
  for (const match of text.matchAll(blockPattern)) {
    const [, kind, name, body] = match;
    if (kind !== "model") throw new Error(`schema parser: ${kind} blocks are not supported (${name})`);
    const fields: SchemaField[] = [];
    const blockAttributes: string[] = [];
    for (const raw of body!.split("\n")) {
      const line = raw.trim();
      if (line === "") continue;
      if (line.startsWith("@@")) {
        blockAttributes.push(line);
        continue;
      }
      const fieldMatch = /^(\w+)\s+(\w+)(\[\])?(\?)?\s*(.*)$/.exec(line);
      if (!fieldMatch) throw new Error(`schema parser: cannot read line in model ${name}: ${line}`);
      const [, fieldName, type, list, optional, rest] = fieldMatch;
      fields.push({
        name: fieldName!,
        type: type!,
        list: Boolean(list),
        optional: Boolean(optional),
        attributes: splitAttributes(rest ?? ""),
      });
    }
    const mapAttr = blockAttributes.find((a) => a.startsWith("@@map("));
    const table = mapAttr ? /@@map\(\s*"([^"]+)"\s*\)/.exec(mapAttr)?.[1] : name;
    if (!table) throw new Error(`schema parser: bad @@map in ${name}`);
    models.push({ name: name!, table, fields, blockAttributes });
  }
  if (models.length === 0) throw new Error("schema parser: no models found");
  return models;
}

export function loadSchemaModels(): SchemaModel[] {
  return parseSchema(readFileSync(schemaPath(), "utf8"));
}

export function isRelationField(field: SchemaField, models: SchemaModel[]): boolean {
  return models.some((m) => m.name === field.type);
}

function nativeType(field: SchemaField): string | undefined {
  return field.attributes.find((a) => a.startsWith("@db."));
}

/** Prisma's PostgreSQL column type for a field, spelled as format_type() prints it. */
function columnType(model: SchemaModel, field: SchemaField): string {
  const native = nativeType(field);
  let base: string;
  if (native) {
    const m = /^@db\.(\w+)(?:\((\d+)\))?$/.exec(native);
    if (!m) throw new Error(`schema parser: unsupported native type ${native} on ${model.name}.${field.name}`);
    const [, nativeName, arg] = m;
    const byNative: Record<string, (a?: string) => string> = {
      Uuid: () => "uuid",
      Text: () => "text",
      Date: () => "date",
      Timestamptz: (a) => `timestamp(${a ?? "6"}) with time zone`,
      Timestamp: (a) => `timestamp(${a ?? "6"}) without time zone`,
      VarChar: (a) => (a ? `character varying(${a})` : "character varying"),
      Integer: () => "integer",
      BigInt: () => "bigint",
      JsonB: () => "jsonb",
      ByteA: () => "bytea",
    };
    const render = byNative[nativeName!];
    if (!render) throw new Error(`schema parser: unsupported native type ${native} on ${model.name}.${field.name}`);
    base = render(arg);
  } else {
    const byScalar: Record<string, string> = {
      String: "text",
      Int: "integer",
      BigInt: "bigint",
      Boolean: "boolean",
      DateTime: "timestamp(3) without time zone",
      Json: "jsonb",
      Bytes: "bytea",
      Float: "double precision",
      Decimal: "numeric(65,30)",
    };
    const scalar = byScalar[field.type];
    if (!scalar) throw new Error(`schema parser: unsupported type ${field.type} on ${model.name}.${field.name}`);
    base = scalar;
  }
  return field.list ? `${base}[]` : base;
}

function columnDefault(model: SchemaModel, field: SchemaField): string | null {
  const attr = field.attributes.find((a) => a.startsWith("@default("));
  if (!attr) return null;
  const value = attr.slice("@default(".length, -1).trim();
  if (value === "now()") return "CURRENT_TIMESTAMP";
  if (value === "true" || value === "false" || /^-?\d+$/.test(value)) return value;
  // a plain string literal, as PostgreSQL reports it for a text column
  const text = /^"([^"'\\]*)"$/.exec(value);
  if (text && field.type === "String") return `'${text[1]}'::text`;
  throw new Error(`schema parser: unsupported default ${attr} on ${model.name}.${field.name}`);
}

/** prisma-engines' ConstraintNames: `{table}_{columns}_{suffix}`, truncated to fit 63 bytes. */
function constraintName(table: string, columns: string[], suffix: string): string {
  let joined = `${table}_${columns.join("_")}`;
  if (joined.length >= POSTGRES_MAX_IDENTIFIER - suffix.length) joined = joined.slice(0, POSTGRES_MAX_IDENTIFIER - suffix.length);
  return `${joined}${suffix}`;
}

function primaryKeyName(table: string): string {
  const name = table.length >= POSTGRES_MAX_IDENTIFIER - 5 ? table.slice(0, POSTGRES_MAX_IDENTIFIER - 5) : table;
  return `${name}_pkey`;
}

/** `[a, b(sort: Desc)]` → columns with sort order. */
function parseColumnList(text: string): { name: string; desc: boolean }[] {
  return text
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "")
    .map((part) => {
      const m = /^(\w+)(?:\(\s*sort:\s*(Asc|Desc)\s*\))?$/.exec(part);
      if (!m) throw new Error(`schema parser: unsupported index column ${part}`);
      return { name: m[1]!, desc: m[2] === "Desc" };
    });
}

function parseBlockIndex(attr: string): { kind: "index" | "unique" | "id"; columns: { name: string; desc: boolean }[]; partial: boolean } | undefined {
  const m = /^@@(index|unique|id)\(\s*\[([^\]]*)\]\s*(,\s*where:\s*raw\("[^"]+"\)\s*)?\)$/.exec(attr);
  if (!m) {
    if (/^@@(index|unique|id)\b/.test(attr)) throw new Error(`schema parser: unsupported arguments in ${attr}`);
    return undefined;
  }
  return { kind: m[1] as "index" | "unique" | "id", columns: parseColumnList(m[2]!), partial: m[3] !== undefined };
}

function parseRelation(attr: string): { fields: string[]; references: string[]; onDelete?: string; onUpdate?: string } {
  const list = (key: string) =>
    (new RegExp(`${key}:\\s*\\[([^\\]]*)\\]`).exec(attr)?.[1] ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
  const action = (key: string) => new RegExp(`${key}:\\s*(\\w+)`).exec(attr)?.[1];
  if (/\bmap:/.test(attr) || /^@relation\(\s*"/.test(attr)) throw new Error(`schema parser: unsupported ${attr}`);
  const onDelete = action("onDelete");
  const onUpdate = action("onUpdate");
  return {
    fields: list("fields"),
    references: list("references"),
    ...(onDelete ? { onDelete } : {}),
    ...(onUpdate ? { onUpdate } : {}),
  };
}

const SUPPORTED_FIELD_ATTRIBUTE = /^@(id|unique|default\(.*\)|updatedAt|db\.\w+(\(\d+\))?|relation\(.*\))$/;
const SUPPORTED_BLOCK_ATTRIBUTE = /^@@(map|index|unique|id)\(/;

export function expectedSchema(models: SchemaModel[]): ExpectedSchema {
  const tables: ExpectedTable[] = [];
  const indexes: ExpectedIndex[] = [];
  const foreignKeys: ExpectedForeignKey[] = [];
  const tableOf = (modelName: string) => {
    const m = models.find((x) => x.name === modelName);
    if (!m) throw new Error(`schema parser: unknown model ${modelName}`);
    return m.table;
  };

  for (const model of models) {
    for (const attr of model.blockAttributes) {
      if (!SUPPORTED_BLOCK_ATTRIBUTE.test(attr)) throw new Error(`schema parser: unsupported ${attr} in ${model.name}`);
    }
    const columns: ExpectedColumn[] = [];
    for (const field of model.fields) {
      for (const attr of field.attributes) {
        if (!SUPPORTED_FIELD_ATTRIBUTE.test(attr)) {
          throw new Error(`schema parser: unsupported attribute ${attr} on ${model.name}.${field.name}`);
        }
      }
      if (isRelationField(field, models)) {
        const relation = field.attributes.find((a) => a.startsWith("@relation("));
        if (!relation) continue; // the back-relation side owns no column
        const rel = parseRelation(relation);
        const fkColumnsOptional = rel.fields.some((f) => model.fields.find((x) => x.name === f)?.optional);
        foreignKeys.push({
          name: constraintName(model.table, rel.fields, "_fkey"),
          table: model.table,
          columns: rel.fields,
          referencedTable: tableOf(field.type),
          referencedColumns: rel.references,
          // Prisma's defaults: Restrict for a required relation, SetNull for an optional one.
          onDelete: (rel.onDelete ?? (fkColumnsOptional ? "SetNull" : "Restrict")) as ReferentialAction,
          onUpdate: (rel.onUpdate ?? "Cascade") as ReferentialAction,
        });
        continue;
      }
      columns.push({
        name: field.name,
        type: columnType(model, field),
        // Prisma never marks scalar lists NOT NULL on PostgreSQL.
        nullable: field.optional || field.list,
        default: columnDefault(model, field),
      });
      if (field.attributes.includes("@id")) {
        indexes.push({ name: primaryKeyName(model.table), table: model.table, unique: true, primary: true, columns: [{ name: field.name, desc: false }], partial: false });
      }
      if (field.attributes.includes("@unique")) {
        indexes.push({ name: constraintName(model.table, [field.name], "_key"), table: model.table, unique: true, primary: false, columns: [{ name: field.name, desc: false }], partial: false });
      }
    }
    for (const attr of model.blockAttributes) {
      const index = parseBlockIndex(attr);
      if (!index) continue;
      const names = index.columns.map((c) => c.name);
      for (const name of names) {
        if (!columns.some((c) => c.name === name)) throw new Error(`schema parser: ${attr} names unknown field ${name}`);
      }
      indexes.push({
        name:
          index.kind === "id"
            ? primaryKeyName(model.table)
            : constraintName(model.table, names, index.kind === "unique" ? "_key" : "_idx"),
        table: model.table,
        unique: index.kind !== "index",
        primary: index.kind === "id",
        columns: index.columns,
        partial: index.partial,
      });
    }
    tables.push({ name: model.table, model: model.name, columns });
  }
  return { tables, indexes, foreignKeys };
}
