// The day partitions of the tables every published audit writes (prisma/migrations/
// 20261125090000_time_partitions explains the layout). DDL, catalog reads, and the ids of a
// dropped events partition: what to create or drop is decided by housekeeping/ from lib/retention.ts.
//
// Names are ours and carry their day: <table>_pYYYYMMDD holds [day, day + 1). The table the
// partitioning started from is <table>_history, the DEFAULT partition; once bounded by a CHECK
// named <table>_history_before_YYYYMMDD it holds only rows before that day, which lets day
// partitions be created beside it without reading it.
import type { SqlExecutor } from "../db/client.js";
import { DAY_MS } from "../domain/retention.js";
import { LIVE_SQL } from "./delivery-sql.js";

/** A partitioned table and its partition key. */
export interface PartitionedTable {
  readonly name: "events" | "webhook_deliveries" | "webhook_delivery_attempts";
  readonly key: "created_at" | "started_at";
}

export const PARTITIONED_TABLES: readonly PartitionedTable[] = [
  { name: "events", key: "created_at" },
  { name: "webhook_deliveries", key: "created_at" },
  { name: "webhook_delivery_attempts", key: "started_at" },
];

export interface Partition {
  readonly table: PartitionedTable["name"];
  readonly name: string;
  /** the first day it holds; null for an unbounded history (it may hold any day) */
  readonly from: Date | null;
  /** the day after the last it holds; null for an unbounded history */
  readonly until: Date | null;
  readonly history: boolean;
}

const DAY_NAME = /_p(\d{4})(\d{2})(\d{2})$/;
const BOUND_NAME = /_history_before_(\d{4})(\d{2})(\d{2})$/;

const ymd = (day: Date) => day.toISOString().slice(0, 10).replaceAll("-", "");
const fromYmd = (m: RegExpExecArray) => new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;
const literal = (at: Date) => `'${at.toISOString()}'`;

export const dayPartitionName = (table: PartitionedTable["name"], day: Date) => `${table}_p${ymd(day)}`;
const historyName = (table: PartitionedTable["name"]) => `${table}_history`;

const LIST = `
SELECT p.relname AS parent, c.relname AS name, pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT' AS is_default,
       (SELECT k.conname FROM pg_constraint k
         WHERE k.conrelid = c.oid AND k.contype = 'c' AND k.convalidated AND k.conname LIKE '%\\_history\\_before\\_%'
         ORDER BY k.conname LIMIT 1) AS bound
  FROM pg_inherits i
  JOIN pg_class c ON c.oid = i.inhrelid
  JOIN pg_class p ON p.oid = i.inhparent
 WHERE p.relname = ANY($1) AND p.relnamespace = current_schema()::regnamespace`;

const LOCK_TIMEOUT = "SET LOCAL lock_timeout = '2s'";

export function partitionsRepo(db: SqlExecutor & { transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> }) {
  return {
    async list(): Promise<Partition[]> {
      const rows = await db.query<{ parent: PartitionedTable["name"]; name: string; is_default: boolean; bound: string | null }>(LIST, [
        PARTITIONED_TABLES.map((t) => t.name),
      ]);
      const out: Partition[] = [];
      for (const r of rows) {
        if (r.is_default) {
          const bound = r.bound ? BOUND_NAME.exec(r.bound) : null;
          out.push({ table: r.parent, name: r.name, from: null, until: bound ? fromYmd(bound) : null, history: true });
          continue;
        }
        const day = DAY_NAME.exec(r.name);
        // a partition someone else made: not ours to judge
        if (!day) continue;
        const from = fromYmd(day);
        out.push({ table: r.parent, name: r.name, from, until: new Date(from.getTime() + DAY_MS), history: false });
      }
      return out.sort((a, b) => (a.from?.getTime() ?? -Infinity) - (b.from?.getTime() ?? -Infinity));
    },

    /** The day after the newest row of the unbounded history (null when it is empty). */
    async historyEnd(t: PartitionedTable): Promise<Date | null> {
      const [row] = await db.query<{ last: Date | null }>(`SELECT max(${t.key}) AS last FROM ONLY ${ident(historyName(t.name))}`);
      return row?.last ? new Date((Math.floor(row.last.getTime() / DAY_MS) + 1) * DAY_MS) : null;
    },

    /**
     * Bounds the history to rows before `until`, so day partitions from `until` on can be created
     * without reading it. NOT VALID then VALIDATE: the check reads the table once under a lock that
     * lets reads and writes go on.
     */
    async boundHistory(t: PartitionedTable, until: Date): Promise<void> {
      const table = ident(historyName(t.name));
      const check = ident(`${t.name}_history_before_${ymd(until)}`);
      // a bound left NOT VALID by an interrupted run would still refuse new rows past its day
      const stale = await db.query<{ name: string }>(
        `SELECT conname AS name FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'c' AND NOT convalidated AND conname LIKE '%\\_history\\_before\\_%'`,
        [historyName(t.name)],
      );
      for (const c of stale) await db.exec(`ALTER TABLE ${table} DROP CONSTRAINT ${ident(c.name)}`);
      await db.exec(`ALTER TABLE ${table} ADD CONSTRAINT ${check} CHECK (${t.key} < ${literal(until)}) NOT VALID`);
      await db.exec(`ALTER TABLE ${table} VALIDATE CONSTRAINT ${check}`);
    },

    async createDay(t: PartitionedTable, day: Date): Promise<void> {
      await db.transaction(async (tx) => {
        await tx.exec(LOCK_TIMEOUT);
        await tx.exec(
          `CREATE TABLE IF NOT EXISTS ${ident(dayPartitionName(t.name, day))} PARTITION OF ${ident(t.name)}
             FOR VALUES FROM (${literal(day)}) TO (${literal(new Date(day.getTime() + DAY_MS))})`,
        );
      });
    },

    /** Whether the partition holds a delivery that is not final (`pending`, `retrying`). */
    async holdsQueuedDeliveries(partition: string): Promise<boolean> {
      // the partition's own copy of the due index answers this (only queued rows are in it)
      const rows = await db.query(`SELECT 1 FROM ONLY ${ident(partition)} WHERE status IN ${LIVE_SQL} LIMIT 1`);
      return rows.length > 0;
    },

    /**
     * Detaches and drops one partition; returns the rows it held. Waits at most 2 s for the
     * parent's lock (a long query on the table): a timeout leaves it for the next run. An events
     * partition takes its ids out of `event_ids` in the same transaction (the index across days,
     * migration 20261128100000_event_ids): a re-send of a dropped event is new again, as before.
     */
    async drop(p: Partition): Promise<number> {
      return db.transaction(async (tx) => {
        await tx.exec(LOCK_TIMEOUT);
        const [row] = await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM ONLY ${ident(p.name)}`);
        await tx.exec(`ALTER TABLE ${ident(p.table)} DETACH PARTITION ${ident(p.name)}`);
        // by the day's range: event_ids rows are written in time order, so the range is a run of
        // adjacent pages, where a join by id probed the key index at random for every row
        if (p.table === "events") {
          // retention drops only bounded partitions (domain/retention.ts): an unbounded history is every event
          if (!p.until) throw new Error(`${p.name} has no upper bound: not dropped`);
          await tx.query("DELETE FROM event_ids WHERE created_at >= $1::timestamptz AND created_at < $2::timestamptz", [p.from ?? "-infinity", p.until]);
        }
        await tx.exec(`DROP TABLE ${ident(p.name)}`);
        return row?.n ?? 0;
      });
    },
  };
}

export type PartitionsRepo = ReturnType<typeof partitionsRepo>;
