// Publishing wakes the dispatchers of other processes by the NOTIFY its own statement sends as it
// commits (repos/events.repo.ts, WAKE), not by a statement of its own after the commit: one round
// trip fewer per publish. PostgreSQL only (on the embedded database no other process listens).
import { randomUUID } from "node:crypto";
import type { PublishEventRequest } from "@audit-review/api-types/internal";
import { afterAll, describe, expect, it } from "vitest";
import { createQueueSignal, type QueueSignal } from "../../src/delivery/queue-signal.js";
import { createEndpoint, ingestQuestionSet, useApiServer } from "../harness/factories.js";
import type { Api } from "../harness/server.js";

const onPostgres = Boolean(process.env.TEST_DATABASE_URL);
const server = onPostgres ? await useApiServer() : undefined;
const signals: QueueSignal[] = [];

afterAll(async () => {
  for (const s of signals) await s.close();
});

/** Another process's dispatcher, as far as waking goes: a queue signal of its own on the same database. */
async function otherProcess(): Promise<{ wakes: () => number }> {
  const s = await createQueueSignal(server!.server.db, (err) => {
    throw err;
  });
  signals.push(s);
  let n = 0;
  s.onWake(() => n++);
  return { wakes: () => n };
}

/** Counts the NOTIFY statements the server sends on their own (db.notify), calling through. */
function countNotifyCalls(): { calls: () => number; restore(): void } {
  const db = server!.server.db;
  const original = db.notify.bind(db);
  let n = 0;
  db.notify = (channel, payload) => {
    n++;
    return original(channel, payload);
  };
  return { calls: () => n, restore: () => void (db.notify = original) };
}

async function eventFor(api: Api): Promise<PublishEventRequest> {
  const set = await ingestQuestionSet(api);
  return { id: randomUUID(), type: "audit.completed", data: { audit_id: randomUUID(), result: "failed", document_id: "doc-wake", question_set_id: set.id } };
}

const quiet = () => new Promise((r) => setTimeout(r, 300));

describe.skipIf(!onPostgres)("publishing wakes other processes' dispatchers (PostgreSQL only: set TEST_DATABASE_URL)", () => {
  it("When an event or a batch queues deliveries, Then another process wakes once per publish, by the statement's own NOTIFY", async () => {
    const { api } = await server!.newOrg();
    await createEndpoint(api);
    const other = await otherProcess();
    const notify = countNotifyCalls();
    try {
      const one = await api.POST("/v2/internal/events", { body: await eventFor(api) });
      expect(one.data).toMatchObject({ created: true, deliveries_created: 1 });
      await expect.poll(other.wakes, { timeout: 5_000 }).toBe(1);

      const batch = await api.POST("/v2/internal/event_batches", { body: { events: [await eventFor(api), await eventFor(api)] } });
      expect(batch.response.status).toBe(200);
      await expect.poll(other.wakes, { timeout: 5_000 }).toBe(2);

      await quiet();
      expect(other.wakes()).toBe(2);
      expect(notify.calls()).toBe(0);
    } finally {
      notify.restore();
    }
  });

  it("When a publish queues nothing (no endpoint matches, or the event is known), Then nobody is woken", async () => {
    const { api } = await server!.newOrg();
    const other = await otherProcess();
    const event = await eventFor(api);
    expect((await api.POST("/v2/internal/events", { body: event })).data).toMatchObject({ created: true, deliveries_created: 0 });
    await createEndpoint(api);
    expect((await api.POST("/v2/internal/events", { body: event })).data).toMatchObject({ created: false, deliveries_created: 0 });
    expect((await api.POST("/v2/internal/event_batches", { body: { events: [event] } })).response.status).toBe(200);
    await quiet();
    expect(other.wakes()).toBe(0);
  });
});
