// The day partitions a service has in its steady state, for benches whose database was made today
// (names as apps/server/src/repos/partitions.repo.ts makes them). A fresh install's history (the
// DEFAULT partition) takes today's rows, and day partitions start tomorrow; a service that has run
// a day stores into today's partition. The engine benches measure the latter: in the history,
// every update checks a partition constraint over all the days, and no statement can prune it.

const DAY_MS = 86_400_000;
const TABLES = [
  { name: "webhook_delivery_attempts", key: "started_at" },
  { name: "webhook_deliveries", key: "created_at" },
  { name: "events", key: "created_at" },
];

/**
 * Today's day partitions and those of the `days` days before, empty. Rows of today left in the
 * history by an earlier run (the benches' own, deleted before each run anyway) are deleted first;
 * a day whose rows the history still holds otherwise stays there.
 */
export async function dayPartitions(client, days) {
  const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  for (const t of TABLES) {
    await client.query(`DELETE FROM ONLY "${t.name}_history" WHERE ${t.key} >= $1`, [new Date(today)]).catch(() => undefined);
  }
  for (let i = 0; i <= days; i++) {
    const from = new Date(today - i * DAY_MS);
    const until = new Date(from.getTime() + DAY_MS);
    const ymd = from.toISOString().slice(0, 10).replaceAll("-", "");
    for (const t of [...TABLES].reverse()) {
      await client
        .query(`CREATE TABLE IF NOT EXISTS "${t.name}_p${ymd}" PARTITION OF "${t.name}" FOR VALUES FROM ('${from.toISOString()}') TO ('${until.toISOString()}')`)
        .catch(() => undefined);
    }
  }
}

/**
 * A clock for the server's `clock` option that starts at `startMs` and runs at real speed from
 * there; `setClock(at)` moves it (the retention bench's simulated days). Its timers are real ones,
 * unreferenced, so the engine's timers and leases behave as in production.
 */
export function simulatedClock(startMs) {
  let simAt = startMs;
  let realAt = Date.now();
  const clock = {
    now: () => new Date(simAt + (Date.now() - realAt)),
    setTimeout(fn, ms) {
      const t = setTimeout(fn, Math.max(0, ms));
      t.unref();
      return { cancel: () => clearTimeout(t) };
    },
  };
  const setClock = (at) => {
    simAt = at;
    realAt = Date.now();
  };
  return { clock, setClock };
}
