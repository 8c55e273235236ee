// The real server for the client's tests, on the test kit's per-test database (PGlite snapshot,
// or a PostgreSQL template copy with TEST_DATABASE_URL) and the kit's server options: response
// validation on, port 0. Plus the small helpers the client's tests share.
import {
  createOrg,
  createToken,
  databaseFromPglite,
  findMigrationsDir,
  migrate,
  openDatabase,
  PUBLIC_SCOPES,
  staticResolver,
  startServer,
  type Database,
} from "@audit-review/server";
import type {
  IngestCodingEvaluationRequest,
  IngestQuestionSetRequest,
  PublishEventRequest,
  PublishedEvent,
} from "@audit-review/api-types/internal";
import type { CodingEvaluation, QuestionSet } from "@audit-review/api-types";
import { serverTestDatabases } from "@audit-review/test-kit/database";
import { resolverTable, testServerOptions } from "@audit-review/test-kit/server-options";
import { afterAll, beforeAll, expect, vi } from "vitest";
import { createClient, type AuditReviewClient } from "../src/index.js";

/** A receiver host that passes the server's URL checks: it "resolves" to a public address. */
export const RECEIVER_HOST = "hooks.client-test.dev";

type StartOptions = Parameters<typeof startServer>[0];

const databases = serverTestDatabases<Database>({ findMigrationsDir, databaseFromPglite, openDatabase, migrate: (db) => migrate(db) });
export interface TestOrg {
  orgId: string;
  /** A token with every public scope. */
  token: string;
  /** The client under test, with `token`. */
  client: AuditReviewClient;
  /** A client whose token holds only `scopes`. */
  clientWith(scopes: readonly string[]): Promise<AuditReviewClient>;
  ingestQuestionSet(body: IngestQuestionSetRequest): Promise<QuestionSet>;
  ingestCodingEvaluation(body?: IngestCodingEvaluationRequest): Promise<CodingEvaluation>;
  publishEvent(body: PublishEventRequest): Promise<PublishedEvent>;
}

export interface TestServer {
  url: string;
  /** A new org (own data, no interference between tests) with tokens and the client under test. */
  newOrg(): Promise<TestOrg>;
  /** Revokes a token, as `ars tokens revoke` does. */
  revokeToken(token: string): Promise<void>;
  close(): Promise<void>;
}

export async function startTestServer(options: StartOptions = {}): Promise<TestServer> {
  const database = await databases.create();
  const server = await startServer({
    ...testServerOptions(),
    ...(database.databaseUrl ? { databaseUrl: database.databaseUrl, migrate: true } : { database: database.db }),
    logLevel: process.env.ARS_TEST_LOG_LEVEL ?? "silent",
    resolver: staticResolver(resolverTable({ publicHosts: [RECEIVER_HOST] })),
    ...options,
  }).catch(async (err: unknown) => {
    await database.close();
    throw err;
  });
  const mint = async (orgId: string, scopes: readonly string[]) => (await createToken(server.db, { orgId, scopes: [...scopes] })).token;

  return {
    url: server.url,
    async newOrg() {
      const org = await createOrg(server.db, { name: `client-test-${Math.random().toString(36).slice(2, 10)}` });
      const token = await mint(org.id, PUBLIC_SCOPES);
      const internalToken = await mint(org.id, ["internal:ingest", "internal:admin"]);
      const ingest = async <T>(path: string, body?: unknown): Promise<T> => {
        // Internal operations are not in the public client: plain fetch.
        const res = await fetch(server.url + path, {
          method: "POST",
          headers: {
            authorization: `Bearer ${internalToken}`,
            ...(body === undefined ? {} : { "content-type": "application/json" }),
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        if (res.status !== 200 && res.status !== 201) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
        return (await res.json()) as T;
      };
      return {
        orgId: org.id,
        token,
        client: createClient({ baseUrl: server.url, token }),
        clientWith: async (scopes) => createClient({ baseUrl: server.url, token: await mint(org.id, scopes) }),
        ingestQuestionSet: (body) => ingest("/v2/internal/question_sets", body),
        ingestCodingEvaluation: (body = {}) => ingest("/v2/internal/coding_evaluations", body),
        publishEvent: (body) => ingest("/v2/internal/events", body),
      };
    },
    async revokeToken(token) {
      const auth = await server.services.tokens.verify(token);
      if (!auth || !(await server.services.tokens.revoke(auth.tokenId))) throw new Error("no such active token");
    },
    async close() {
      await server.close();
      await database.close();
    },
  };
}

/** Starts one server for the test file (beforeAll) and closes it after (afterAll). */
export function useTestServer(options: StartOptions = {}): () => TestServer {
  let server: TestServer | undefined;
  beforeAll(async () => {
    server = await startTestServer(options);
  });
  afterAll(async () => {
    await server?.close();
  });
  return () => {
    if (!server) throw new Error("the test server is not started yet (use it inside tests or hooks)");
    return server;
  };
}

export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

export const ids = (items: ReadonlyArray<{ id: string }>) => items.map((item) => item.id);

/** A client of `baseUrl` that records the URL of every request it sends (to count pages). */
export function observedClient(baseUrl: string, token: string): { client: AuditReviewClient; urls: URL[] } {
  const urls: URL[] = [];
  const client = createClient({
    baseUrl,
    token,
    fetch: (req) => {
      urls.push(new URL(req.url));
      return fetch(req);
    },
  });
  return { client, urls };
}

/**
 * The question-set and coding-evaluation lists are eventually consistent (the contract allows a
 * lag of a few seconds): wait until the list counts what was ingested.
 */
export async function untilTotal(read: () => Promise<{ total_count?: number }>, expected: number): Promise<void> {
  await vi.waitFor(async () => expect((await read()).total_count).toBe(expected), { timeout: 15_000, interval: 50 });
}
