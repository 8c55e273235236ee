// Tells every process that an endpoint was updated, deleted or had its secret rotated, so the
// engine's caches of endpoint rows and what is derived from them (signing keys, OAuth2 tokens)
// drop their entry: at once in this process, through LISTEN/NOTIFY in the others on the same
// PostgreSQL. A notice lost while a connection is re-established costs nothing but freshness:
// the engine still reads an endpoint again when a row waited for its slot (deliver.ts), and
// entries compare the stored secrets they were derived from.
import { EventEmitter } from "node:events";
import type { Database } from "../db/client.js";

export const ENDPOINT_CHANNEL = "ars_endpoint_changes";

export interface EndpointChanges {
  publish(endpointId: string): void;
  subscribe(fn: (endpointId: string) => void): () => void;
  close(): Promise<void>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function createEndpointChanges(db: Database, onError: (err: unknown) => void): Promise<EndpointChanges> {
  const local = new EventEmitter();
  local.setMaxListeners(0);
  // a notice from another process; our own come back too and are harmless (a second eviction)
  const unlisten = db.kind === "postgres" ? await db.listen(ENDPOINT_CHANNEL, (id) => UUID.test(id) && local.emit("changed", id)) : null;
  return {
    publish(endpointId) {
      local.emit("changed", endpointId);
      if (db.kind === "postgres") db.notify(ENDPOINT_CHANNEL, endpointId).catch(onError);
    },
    subscribe(fn) {
      local.on("changed", fn);
      return () => local.off("changed", fn);
    },
    async close() {
      local.removeAllListeners();
      await unlisten?.();
    },
  };
}
