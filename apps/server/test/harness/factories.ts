import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import type {
  CodingEvaluation,
  CreatedWebhookEndpoint,
  CreateWebhookEndpointRequest,
  IngestCodingEvaluationRequest,
  IngestQuestionSetRequest,
  Problem,
  PublishedEvent,
  PublishEventRequest,
  QuestionSet,
} from "@audit-review/api-types/internal";
import { afterAll, expect } from "vitest";
import { parse } from "yaml";
import { SPEC_PATH } from "../../src/lib/paths.js";
import { staticResolver } from "../../src/net/resolver.js";
import type { StartServerOptions } from "../../src/server.js";
import { startTestServer, type Api, type TestServer } from "./server.js";

/** Request bodies that rely on the server's defaults (typed: defaulted fields are optional). */
export const createBody = (b: CreateWebhookEndpointRequest): CreateWebhookEndpointRequest => b;
export const questionSetBody = (b: IngestQuestionSetRequest): IngestQuestionSetRequest => b;
export const evaluationBody = (b: IngestCodingEvaluationRequest): IngestCodingEvaluationRequest => b;

/** A short random suffix: every factory value is unique per test, so tests never see each other's data. */
export const uniq = (): string => randomBytes(5).toString("hex");

/** Names answered without DNS: public ones for successful creates, private ones for refusals. */
export const PUBLIC_HOST = "hooks.acme-receiver.com";
export const testResolver = staticResolver({
  [PUBLIC_HOST]: ["93.184.216.34"],
  "auth.acme-receiver.com": ["93.184.216.34"],
  "v6.acme-receiver.com": ["2606:4700:4700::1111"],
  "rfc1918.evil-receiver.com": ["10.0.0.1"],
  "metadata.evil-receiver.com": ["169.254.169.254"],
  "loopback6.evil-receiver.com": ["::1"],
  "ula.evil-receiver.com": ["fd00::1"],
  "cgnat.evil-receiver.com": ["100.64.0.1"],
  "loopback.evil-receiver.com": ["127.0.0.1"],
  "mixed.evil-receiver.com": ["93.184.216.34", "192.168.1.10"],
  "mapped.evil-receiver.com": ["::ffff:10.0.0.1"],
  "nat64.evil-receiver.com": ["64:ff9b::a9fe:a9fe"],
  "sixtofour.evil-receiver.com": ["2002:7f00:1::1"],
  "linklocal6.evil-receiver.com": ["fe80::1"],
  "docs.evil-receiver.com": ["192.0.2.10"],
  "bench.evil-receiver.com": ["198.18.0.1"],
  "multicast.evil-receiver.com": ["224.0.0.1"],
  "unspecified.evil-receiver.com": ["0.0.0.0"],
});

/**
 * Every credential the tests handed to or got from the server; none may ever reach a log line.
 * Values shorter than 8 characters (placeholders of validation tests) would match by chance.
 */
export const credentials = new Set<string>();
export const remember = (...values: Array<string | undefined>): void => values.forEach((v) => v && v.length >= 8 && credentials.add(v));

/**
 * The real server for one test file (fresh database, contract validation on) with the test
 * resolver; every token it mints is remembered, and after the file no log line may hold any
 * remembered credential.
 */
export async function useApiServer(opts: StartServerOptions = {}): Promise<TestServer> {
  const server = await startTestServer({ resolver: testResolver, ...opts });
  const { newOrg, token } = server;
  server.newOrg = async (scopes) => {
    const org = await newOrg(scopes);
    remember(org.token);
    return org;
  };
  server.token = async (orgId, scopes) => {
    const t = await token(orgId, scopes);
    remember(t);
    return t;
  };
  afterAll(() => expectNoCredentialsLogged(server));
  return server;
}

export function expectNoCredentialsLogged(server: TestServer): void {
  expect(server.logs.length, "the server logged its requests").toBeGreaterThan(0);
  for (const line of server.logs) {
    for (const secret of credentials) {
      if (line.includes(secret)) throw new Error(`a log line contains a credential: ${line.replace(secret, "<CREDENTIAL>")}`);
    }
  }
}

function fail(what: string, response: Response, error: unknown): never {
  throw new Error(`${what} answered ${response.status}: ${JSON.stringify(error)}`);
}

export async function ingestQuestionSet(api: Api, overrides: Partial<IngestQuestionSetRequest> = {}): Promise<QuestionSet> {
  const u = uniq();
  const body: IngestQuestionSetRequest = {
    set_name: `Set ${u}`,
    set_code: `SET-${u}`,
    type: "compliance",
    is_production: true,
    allow_doc_upload: false,
    thresholds: [{ label: "pass", min_score: 80 }],
    questions: [{ query: `Is ${u} documented?`, question_type: "yes_no", severity: "high", remediation: "Document it." }],
    ...overrides,
  };
  const { data, error, response } = await api.POST("/v2/internal/question_sets", { body });
  if (!data) fail("ingestQuestionSet", response, error);
  expect(response.status).toBe(201);
  return data;
}

export async function ingestCodingEvaluation(api: Api, overrides: Partial<IngestCodingEvaluationRequest> = {}): Promise<CodingEvaluation> {
  const body: IngestCodingEvaluationRequest = { audit_id: randomUUID(), status: "completed", processed: true, ...overrides };
  const { data, error, response } = await api.POST("/v2/internal/coding_evaluations", { body });
  if (!data) fail("ingestCodingEvaluation", response, error);
  expect(response.status).toBe(201);
  return data;
}

/** A created endpoint on the public test host (unique path); its secret is remembered. */
export async function createEndpoint(api: Api, overrides: Partial<CreateWebhookEndpointRequest> = {}): Promise<CreatedWebhookEndpoint> {
  const body: CreateWebhookEndpointRequest = { url: `https://${PUBLIC_HOST}/hooks/${uniq()}`, ...overrides };
  rememberAuthentication(body);
  const { data, error, response } = await api.POST("/v2/webhook_endpoints", { body });
  if (!data) fail("createEndpoint", response, error);
  expect(response.status).toBe(201);
  remember(data.secret);
  return data;
}

/** The write-only values of a create request's receiver authentication. */
export function rememberAuthentication(body: Partial<CreateWebhookEndpointRequest>): void {
  const auth = body.authentication;
  if (auth?.type === "basic") remember(auth.password);
  if (auth?.type === "headers") remember(...Object.values(auth.headers ?? {}));
  if (auth?.type === "oauth2_client_credentials") remember(auth.client_secret);
}

export interface EventOverrides extends Partial<Omit<PublishEventRequest, "data">> {
  data?: Partial<PublishEventRequest["data"]>;
}

/** Publishes an audit.completed; without a question_set_id, a set is ingested for it first. */
export async function publishEvent(api: Api, overrides: EventOverrides = {}): Promise<{ request: PublishEventRequest; event: PublishedEvent }> {
  const questionSetId = overrides.data?.question_set_id ?? (await ingestQuestionSet(api)).id;
  const request: PublishEventRequest = {
    id: randomUUID(),
    type: "audit.completed",
    ...overrides,
    data: { audit_id: randomUUID(), result: "failed", document_id: `doc-${uniq()}`, ...overrides.data, question_set_id: questionSetId },
  };
  const { data, error, response } = await api.POST("/v2/internal/events", { body: request });
  if (!data) fail("publishEvent", response, error);
  return { request, event: data };
}

const spec = parse(readFileSync(SPEC_PATH, "utf8")) as {
  paths: Record<string, Record<string, { operationId?: string; responses?: Record<string, unknown> }>>;
  components: { schemas: { ErrorCode: { enum: string[] } } };
};

/** The response statuses the contract documents for an operation: a problem must use one of them. */
export function documentedStatuses(operationId: string): number[] {
  for (const item of Object.values(spec.paths)) {
    for (const op of Object.values(item)) {
      if (op.operationId === operationId) return Object.keys(op.responses ?? {}).map(Number);
    }
  }
  throw new Error(`no operation ${operationId} in the contract`);
}
const PROBLEM_KEYS = ["type", "title", "status", "detail", "code", "request_id", "errors"];

export interface ExpectedProblem {
  status: number;
  code: Problem["code"];
  /** the parameter the problem must name in `errors` */
  name?: string;
  location?: "query" | "path" | "header" | "body";
}

/**
 * An RFC 9457 problem of the contract's shape (problem responses are not covered by the
 * validator's response check, so it is done here), naming the offending parameter if expected.
 */
export function expectProblem(response: Response, body: unknown, expected: ExpectedProblem): Problem {
  expect(response.status, JSON.stringify(body)).toBe(expected.status);
  expect(response.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  const problem = body as Problem;
  expect(Object.keys(problem).every((k) => PROBLEM_KEYS.includes(k)), `unexpected keys in ${JSON.stringify(problem)}`).toBe(true);
  expect(problem).toMatchObject({
    // the code's entry in the error catalogue, relative to the server that answered
    type: `/problems/${expected.code.toLowerCase().replace(/_/g, "-")}`,
    title: expect.any(String),
    status: expected.status,
    detail: expect.any(String),
    code: expected.code,
    request_id: response.headers.get("x-request-id"),
  });
  expect(spec.components.schemas.ErrorCode.enum).toContain(problem.code);
  for (const issue of problem.errors ?? []) {
    expect(issue).toEqual({ location: expect.stringMatching(/^(query|path|header|body)$/), name: expect.any(String), message: expect.any(String) });
  }
  if (expected.name !== undefined) {
    const named = (problem.errors ?? []).find((i) => i.name === expected.name && (!expected.location || i.location === expected.location));
    expect(named, `problem names ${expected.name}: ${JSON.stringify(problem)}`).toBeDefined();
    expect(problem.detail).toContain(expected.name);
  }
  return problem;
}

/** For openapi-fetch results: `expectProblem` on `{ response, error }`. */
export const problemOf = (result: { response: Response; error?: unknown }, expected: ExpectedProblem): Problem =>
  expectProblem(result.response, result.error, expected);

/** For raw fetch responses. */
export async function rawProblem(response: Response, expected: ExpectedProblem): Promise<Problem> {
  return expectProblem(response, await response.json(), expected);
}

/** A well-formed UUID nobody has used. */
export const unknownId = (): string => randomUUID();
