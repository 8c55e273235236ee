// The hand-written migration SQL must produce exactly the database schema.prisma describes:
// editing one without the other fails here.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Prisma } from "../../src/generated/prisma/client.js";
import { ENUMERATED_COLUMNS } from "../../src/lib/stored-values.js";
import { createTestDatabase, type TestDatabase } from "../harness/db.js";
import { readCatalog, type ActualSchema } from "./catalog.js";
import { expectedSchema, isRelationField, loadSchemaModels, parseSchema, type ExpectedSchema, type SchemaModel } from "./prisma-schema.js";

const MIGRATIONS_TABLE = "_prisma_migrations";

/**
 * Indexes on an expression, which Prisma's schema cannot describe: each named in schema.prisma's
 * comments and defined by its migration alone (and checked here to exist, partial, on one table).
 */
const EXPRESSION_INDEXES = new Map([["webhook_deliveries_queued_day_idx", "webhook_deliveries"]]);

let t: TestDatabase;
let models: SchemaModel[];
let expected: ExpectedSchema;
let actual: ActualSchema;

beforeAll(async () => {
  t = await createTestDatabase();
  models = loadSchemaModels();
  expected = expectedSchema(models);
  actual = await readCatalog(t.db);
});

afterAll(async () => {
  await t?.close();
});

const byName = <T extends { name: string }>(items: T[]) => [...items].sort((a, b) => a.name.localeCompare(b.name));

describe("schema.prisma parser", () => {
  it("agrees with the generated Prisma client on models and scalar fields", () => {
    // Guards the parser (and a stale generated client): both read the same schema file.
    const enums = Prisma as unknown as Record<string, Record<string, string> | undefined>;
    expect(models.map((m) => m.name).sort()).toEqual(Object.values(Prisma.ModelName).sort());
    for (const model of models) {
      const scalarFields = model.fields.filter((f) => !isRelationField(f, models)).map((f) => f.name);
      expect(scalarFields, model.name).toEqual(Object.values(enums[`${model.name}ScalarFieldEnum`] ?? {}));
    }
  });

  it("derives Prisma's names, types and defaults", () => {
    const derived = expectedSchema(
      parseSchema(`
        model Thing {
          id    String   @id @db.Uuid
          org   String
          tags  String[]
          at    DateTime @default(now()) @db.Timestamptz(3)
          n     Int?     @default(0)
          a_very_long_column_name_number_one String
          a_very_long_column_name_number_two String
          @@index([org, at(sort: Desc)])
          @@index([a_very_long_column_name_number_one, a_very_long_column_name_number_two])
          @@map("things")
        }`),
    );
    expect(derived.tables[0]?.columns).toEqual([
      { name: "id", type: "uuid", nullable: false, default: null },
      { name: "org", type: "text", nullable: false, default: null },
      { name: "tags", type: "text[]", nullable: true, default: null },
      { name: "at", type: "timestamp(3) with time zone", nullable: false, default: "CURRENT_TIMESTAMP" },
      { name: "n", type: "integer", nullable: true, default: "0" },
      { name: "a_very_long_column_name_number_one", type: "text", nullable: false, default: null },
      { name: "a_very_long_column_name_number_two", type: "text", nullable: false, default: null },
    ]);
    expect(derived.indexes.map((i) => i.name)).toEqual([
      "things_pkey",
      "things_org_at_idx",
      // 63 bytes at most, as prisma-engines truncates
      "things_a_very_long_column_name_number_one_a_very_long_colum_idx",
    ]);
    expect(derived.indexes[1]?.columns).toEqual([
      { name: "org", desc: false },
      { name: "at", desc: true },
    ]);
  });

  it("refuses schema features it does not understand", () => {
    expect(() => expectedSchema(parseSchema(`model A {\n id String @id @map("x")\n}`))).toThrow(/unsupported/);
    expect(() => expectedSchema(parseSchema(`model A {\n id String @id\n @@index([id], type: Hash)\n}`))).toThrow(/unsupported/);
  });
});

describe("migrated database matches schema.prisma", () => {
  it("has exactly the tables of the models (plus Prisma's migrations table)", () => {
    expect(actual.tables).toEqual([...expected.tables.map((t) => t.name), MIGRATIONS_TABLE].sort());
  });

  it("has every column with Prisma's type, nullability and default, in field order", () => {
    for (const table of expected.tables) {
      expect(actual.columns.get(table.name), table.name).toEqual(table.columns);
    }
  });

  it("has exactly the expected primary keys, unique indexes and indexes, with sort order", () => {
    const actualIndexes = actual.indexes.filter((i) => i.table !== MIGRATIONS_TABLE && !EXPRESSION_INDEXES.has(i.name));
    for (const index of actualIndexes) {
      expect({ name: index.name, method: index.method, expressions: index.expressions }).toEqual({
        name: index.name,
        method: "btree",
        expressions: false,
      });
    }
    expect(byName(actualIndexes.map(({ name, table, unique, primary, columns, partial }) => ({ name, table, unique, primary, columns, partial })))).toEqual(
      byName(expected.indexes),
    );
  });

  it("has the expression indexes its migrations define, each partial, on its table", () => {
    for (const [name, table] of EXPRESSION_INDEXES) {
      const index = actual.indexes.find((i) => i.name === name);
      expect({ name, table: index?.table, method: index?.method, expressions: index?.expressions, partial: Boolean(index?.partial) })
        .toEqual({ name, table, method: "btree", expressions: true, partial: true });
    }
  });

  it("has exactly the expected foreign keys with Prisma's referential actions", () => {
    expect(byName(actual.foreignKeys)).toEqual(byName(expected.foreignKeys));
  });

  it("has no constraints Prisma would not create (exclusions, unique constraints), and only the stored-value checks", () => {
    // p = primary key, f = foreign key, n = NOT NULL (catalogued as constraints since PostgreSQL 18)
    const unexpected = actual.constraintTypes.filter((c) => c.table !== MIGRATIONS_TABLE && !["p", "f", "n", "c"].includes(c.type));
    expect(unexpected).toEqual([]);
    // c = CHECK: one per enumerated column (lib/stored-values.ts), the auth_config shape, what each
    // kind of endpoint subscribes to, and which columns each kind of event fills
    const checks = actual.constraintTypes.filter((c) => c.type === "c").map((c) => c.name);
    const expectedChecks = [
      ...Object.keys(ENUMERATED_COLUMNS).map((k) => `${k.replace(".", "_")}_check`),
      "webhook_endpoints_auth_config_check",
      "webhook_endpoints_kind_event_types_check",
      "events_shape_check",
    ];
    expect(checks.sort()).toEqual(expectedChecks.sort());
  });

  it("enforces one delivery per (event, endpoint) as a unique index (with the day partition key every delivery of an event shares)", () => {
    const unique = actual.indexes.find((i) => i.table === "webhook_deliveries" && i.unique && !i.primary);
    expect(unique?.columns.map((c) => c.name)).toEqual(["event_id", "endpoint_id", "created_at"]);
  });

  it("partitions events, deliveries and attempts by range on their time column, the history as the default partition", async () => {
    const rows = await t.db.query<{ table: string; strategy: string; key: string; has_default: boolean }>(
      `SELECT c.relname AS table, p.partstrat::text AS strategy, a.attname AS key, p.partdefid <> 0 AS has_default
         FROM pg_partitioned_table p
         JOIN pg_class c ON c.oid = p.partrelid
         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = p.partattrs[0]
        WHERE c.relnamespace = current_schema()::regnamespace ORDER BY 1`,
    );
    expect(rows).toEqual([
      { table: "events", strategy: "r", key: "created_at", has_default: true },
      { table: "webhook_deliveries", strategy: "r", key: "created_at", has_default: true },
      { table: "webhook_delivery_attempts", strategy: "r", key: "started_at", has_default: true },
    ]);
  });
});
