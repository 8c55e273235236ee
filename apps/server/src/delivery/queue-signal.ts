import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import type { Database } from "../db/client.js";

export const DELIVERY_CHANNEL = "ars_deliveries";

/**
 * Wakes dispatchers when deliveries are queued: at once in this process, and through
 * LISTEN/NOTIFY for dispatchers in other processes on the same PostgreSQL. Dispatchers still
 * poll, because a notification sent while a listener reconnects is lost.
 */
export interface QueueSignal {
  notify(): void;
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
