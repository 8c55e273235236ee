// The real server for the client's tests: started on port 0 with response validation on, on an
// in-memory PGlite or (TEST_DATABASE_URL) a fresh PostgreSQL database; closed after the file.
import { randomBytes } from "node:crypto";
import { createOrg, createToken, staticResolver, startServer } from "@audit-review/server";
import type {
  IngestCodingEvaluationRequest,
  IngestQuestionSetRequest,
  PublishEventRequest,
  PublishedEvent,
} from "@audit-review/api-types/internal";
import type { CodingEvaluation, CreatedWebhookEndpoint, QuestionSet } from "@audit-review/api-types";
import { afterAll, beforeAll } from "vitest";
import { createClient, type AuditReviewClient } from "../../src/index.js";
import { createTestDatabase } from "./database.js";

/** A receiver host that passes the server's URL checks: it "resolves" to a public address. */
export const RECEIVER_HOST = "hooks.client-test.dev";
export const PUBLIC_SCOPES = ["question_sets:read", "coding_evaluations:read", "webhooks:read", "webhooks:write"] as const;

type StartOptions = Parameters<typeof startServer>[0];

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
}

export async function startTestServer(options: StartOptions = {}): Promise<TestServer & { close(): Promise<void> }> {
  const database = await createTestDatabase();
  const server = await startServer({
    port: 0,
    host: "127.0.0.1",
    ...(database ? { databaseUrl: database.databaseUrl, migrate: true } : { inMemory: true }),
    encryptionKey: randomBytes(32).toString("base64"),
    validateResponses: true,
    rateLimitPerMinute: 0,
    logLevel: process.env.ARS_TEST_LOG_LEVEL ?? "silent",
    dispatcher: false,
    resolver: staticResolver({ [RECEIVER_HOST]: ["93.184.216.34"] }),
    ...options,
  }).catch(async (err: unknown) => {
    await database?.drop();
    throw err;
  });
  const mint = async (orgId: string, scopes: readonly string[]) =>
    (await createToken(server.db, { orgId, scopes: [...scopes] })).token;

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
    async close() {
      await server.close();
      await database?.drop();
    },
  };
}

/** Starts one server for the test file (beforeAll) and closes it after (afterAll). */
export function useTestServer(options: StartOptions = {}): () => TestServer {
  let server: (TestServer & { close(): Promise<void> }) | undefined;
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
