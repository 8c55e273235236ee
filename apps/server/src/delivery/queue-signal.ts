import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import type { Database } from "../db/client.js";
import type { CommitNotice } from "../db/types.js";

export const DELIVERY_CHANNEL = "ars_deliveries";

/**
 * Wakes dispatchers when deliveries are queued: at once in this process, and through
 * LISTEN/NOTIFY for dispatchers in other processes on the same PostgreSQL. Dispatchers still
 * poll, because a notification sent while a listener reconnects is lost.
 */
export interface QueueSignal {
  notify(): void;
  /**
   * What a statement that queues deliveries sends as it commits, in place of notify()'s
   * round trip: it wakes the other processes' dispatchers (wakeHere() wakes this one's). Null on
   * the embedded database, where no other process listens.
   */
  readonly notice: CommitNotice | null;
  /** Wakes this process's dispatchers only: the statement that queued the rows sent `notice` itself. */
  wakeHere(): void;
  onWake(listener: () => void): () => void;
  close(): Promise<void>;
}

export async function createQueueSignal(db: Database, onError: (err: unknown) => void): Promise<QueueSignal> {
  const local = new EventEmitter();
  local.setMaxListeners(0);
  // This process's own notifications come back to it: it woke at once already, and a second
  // wake-up a moment later started a second claim that found nothing.
  const self = randomUUID();
  const unlisten = db.kind === "postgres" ? await db.listen(DELIVERY_CHANNEL, (from) => from !== self && local.emit("wake")) : null;
  return {
    notify() {
      local.emit("wake");
      if (db.kind === "postgres") db.notify(DELIVERY_CHANNEL, self).catch(onError);
    },
    notice: db.kind === "postgres" ? { channel: DELIVERY_CHANNEL, payload: self } : null,
    wakeHere() {
      local.emit("wake");
    },
    onWake(listener) {
      local.on("wake", listener);
      return () => local.off("wake", listener);
    },
    async close() {
      local.removeAllListeners();
      await unlisten?.();
    },
  };
}
