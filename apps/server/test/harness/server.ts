import createClient, { type Client } from "openapi-fetch";
import type { paths } from "@audit-review/api-types/internal";
import { testServerOptions } from "@audit-review/test-kit/server-options";
import { afterAll } from "vitest";
import { capturedLogger } from "./captured-logger.js";
import { startServer, type RunningServer, type StartServerOptions } from "../../src/server.js";
import { ALL_SCOPES } from "../../src/services/tokens.service.js";
import { createTestDatabase } from "./db.js";
import { drainDispatcher, type DrainOptions } from "./drain.js";

export type Api = Client<paths>;

export interface TestOrg {
  orgId: string;
  token: string;
  api: Api;
}

export interface TestServer {
  url: string;
  server: RunningServer;
  /** Every log line the server wrote, for checks that no secret is logged. */
  logs: string[];
  /** A new org with a token holding `scopes` (all scopes by default) and a typed client for it. */
  newOrg(scopes?: readonly string[]): Promise<TestOrg>;
  token(orgId: string, scopes: readonly string[]): Promise<string>;
  client(token: string): Api;
  /** Untyped requests, for inputs the typed client would not let us send. */
  raw(path: string, init?: RequestInit & { token?: string }): Promise<Response>;
  /**
   * Waits for the in-process dispatcher (`dispatcher: true`): until nothing is due or in
   * flight, or with `untilSettled` until no delivery is pending or retrying at all.
   */
  drain(opts?: DrainOptions): Promise<void>;
  close(): Promise<void>;
}

/**
 * The real server (contract validation of every response on) on port 0, on a fresh in-memory
 * PGlite, or a fresh PostgreSQL database when TEST_DATABASE_URL is set. Closed after the file.
 */
export async function startTestServer(opts: StartServerOptions = {}): Promise<TestServer> {
  const { logger, lines: logs } = capturedLogger();
  // A fresh database per server: PostgreSQL gets its own database (the server opens its pool);
  // PGlite is restored from a migrated snapshot, seconds faster than creating and migrating one.
  const testDb = await createTestDatabase();
  const server = await startServer({
    ...testServerOptions(),
    ...(testDb.databaseUrl ? { databaseUrl: testDb.databaseUrl, migrate: true } : { database: testDb.db }),
    logger,
    ...opts,
  });
  const client = (token: string): Api =>
    createClient<paths>({ baseUrl: server.url, headers: { authorization: `Bearer ${token}` } });
  const token = async (orgId: string, scopes: readonly string[]) =>
    (await server.services.tokens.createToken(orgId, scopes, "test")).token;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await server.close();
    await testDb.close();
  };
  afterAll(close);
  return {
    url: server.url,
    server,
    logs,
    async newOrg(scopes = ALL_SCOPES) {
      const org = await server.services.tokens.createOrg(`org-${Math.random().toString(36).slice(2, 8)}`);
      const t = await token(org.id, scopes);
      return { orgId: org.id, token: t, api: client(t) };
    },
    token,
    client,
    raw(path, init = {}) {
      const { token: t, headers, ...rest } = init;
      return fetch(server.url + path, {
        ...rest,
        headers: { ...(t ? { authorization: `Bearer ${t}` } : {}), ...(headers as Record<string, string> | undefined) },
      });
    },
    drain(opts) {
      if (server.dispatcher.scope !== "all") throw new Error("drain() needs startTestServer({ dispatcher: true })");
      return drainDispatcher(server.deps, opts);
    },
    close,
  };
}
