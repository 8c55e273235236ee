// LISTEN on PostgreSQL needs a connection of its own: a pooled connection goes back to the pool
// (and to other queries) after each use, and would take its subscriptions with it. This keeps one
// dedicated client, re-subscribes every channel after a reconnect, and backs off while the
// server is unreachable.
import pg from "pg";
import { assertChannelName } from "./types.js";

export const LISTENER_APPLICATION_NAME = "ars-listener";

const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5_000;

type Handler = (payload: string) => void;

export interface PgListener {
  listen(channel: string, handler: Handler): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export function createPgListener(connectionString: string): PgListener {
  const handlers = new Map<string, Set<Handler>>();
  let client: pg.Client | null = null;
  let connecting: Promise<pg.Client> | null = null;
  let reconnectTimer: NodeJS.Timeout | null = null;
  let reconnectDelay = RECONNECT_MIN_MS;
  let closed = false;

  function dispatch(message: pg.Notification): void {
    for (const handler of handlers.get(message.channel) ?? []) {
      try {
        handler(message.payload ?? "");
      } catch {
        // One faulty subscriber must not starve the others or kill the connection.
      }
    }
  }

  function dropped(which: pg.Client): void {
    if (client !== which) return;
    client = null;
    which.end().catch(() => undefined);
    scheduleReconnect();
  }

  function scheduleReconnect(): void {
    if (closed || reconnectTimer || handlers.size === 0) return;
    reconnectTimer = setTimeout(() => {
      reconnectTimer = null;
      ensureConnected().then(
        () => {
          reconnectDelay = RECONNECT_MIN_MS;
        },
        () => {
          reconnectDelay = Math.min(reconnectDelay * 2, RECONNECT_MAX_MS);
          scheduleReconnect();
        },
      );
    }, reconnectDelay);
    // A pending reconnect alone must not keep the process alive.
    reconnectTimer.unref();
  }

  async function connect(): Promise<pg.Client> {
    const next = new pg.Client({ connectionString, application_name: LISTENER_APPLICATION_NAME });
    // Without an 'error' listener a dropped connection would crash the process.
    next.on("error", () => dropped(next));
    next.on("end", () => dropped(next));
    next.on("notification", dispatch);
    try {
      await next.connect();
      for (const channel of handlers.keys()) await next.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (error) {
      next.removeAllListeners("end");
      await next.end().catch(() => undefined);
      throw error;
    }
    if (closed) {
      await next.end().catch(() => undefined);
      throw new Error("database closed");
    }
    client = next;
    return next;
  }

  function ensureConnected(): Promise<pg.Client> {
    if (client) return Promise.resolve(client);
    connecting ??= connect().finally(() => {
      connecting = null;
    });
    return connecting;
  }

  async function unlisten(channel: string, handler: Handler): Promise<void> {
    const set = handlers.get(channel);
    if (!set?.delete(handler) || set.size > 0) return;
    handlers.delete(channel);
    await client?.query(`UNLISTEN ${pg.escapeIdentifier(channel)}`).catch(() => undefined);
  }

  return {
    async listen(channel, handler) {
      assertChannelName(channel);
      if (closed) throw new Error("database closed");
      let set = handlers.get(channel);
      const isNewChannel = !set;
      if (!set) handlers.set(channel, (set = new Set()));
      set.add(handler);
      try {
        const current = await ensureConnected();
        // A fresh connection has already subscribed every registered channel.
        if (isNewChannel) await current.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      } catch (error) {
        await unlisten(channel, handler);
        throw error;
      }
      let active = true;
      return async () => {
        if (!active) return;
        active = false;
        await unlisten(channel, handler);
      };
    },

    async close() {
      closed = true;
      if (reconnectTimer) clearTimeout(reconnectTimer);
      reconnectTimer = null;
      handlers.clear();
      const pending = connecting;
      const current = client;
      client = null;
      await pending?.catch(() => undefined);
      await current?.end().catch(() => undefined);
    },
  };
}
