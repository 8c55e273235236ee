// A program a user of @audit-review/client writes, installed from the packed tarballs into a
// project outside the repository and compiled with `tsc --strict` (scripts/ci/ts-consumer.mjs).
//   node consumer.js api                       iterate, filter, ApiError, create an endpoint
//   node consumer.js verify <delivery.json>    verify and parse a delivery the server sent
import { readFileSync } from "node:fs";
import { ApiError, createClient, type QuestionSet, type WebhookEndpoint } from "@audit-review/client";
import { parseAuditCompleted, verifyWebhook, WebhookVerificationError } from "@audit-review/client/webhooks";

function check(condition: boolean, message: string): asserts condition {
  if (!condition) {
    process.stderr.write(`consumer: FAILED: ${message}\n`);
    process.exit(1);
  }
}

const env = (name: string): string => {
  const value = process.env[name];
  check(value !== undefined && value !== "", `${name} is not set`);
  return value;
};

async function api(): Promise<void> {
  const client = createClient({ baseUrl: env("ARS_BASE_URL"), token: env("ARS_TOKEN") });
  const expected: string[] = JSON.parse(env("ARS_EXPECTED_QUESTION_SET_IDS"));

  // The iterator follows the cursors, two per page.
  const walked: QuestionSet[] = [];
  for await (const set of client.paginate("/v2/question_sets", { query: { limit: 2 } })) walked.push(set);
  check(JSON.stringify(walked.map((s) => s.id)) === JSON.stringify(expected), `walked ${walked.map((s) => s.id)}`);

  const production = await client.listQuestionSets({ is_production: "true", limit: 100, include_total: "true" });
  check(production.data.length > 0 && production.data.every((s) => s.is_production), "is_production=true filters");
  check(production.total_count === production.data.length, "total_count with include_total");

  // A 400 is an ApiError carrying the problem.
  try {
    await client.listQuestionSets({ starting_after: "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f61" });
    check(false, "an unknown cursor must be refused");
  } catch (err) {
    check(err instanceof ApiError, `not an ApiError: ${String(err)}`);
    check(err.status === 400 && err.code === "INVALID_CURSOR", `${err.status} ${err.code}`);
  }

  const endpoint = await client.createWebhookEndpoint({ url: env("ARS_RECEIVER_URL"), description: "ts-consumer" });
  const listed: WebhookEndpoint[] = (await client.listWebhookEndpoints()).data;
  check(listed.some((e) => e.id === endpoint.id), "the new endpoint is listed");
  process.stdout.write(`${JSON.stringify({ endpoint_id: endpoint.id, secret: endpoint.secret })}\n`);
}

function verify(file: string): void {
  const delivery = JSON.parse(readFileSync(file, "utf8")) as { headers: Record<string, string>; body_base64: string; secret: string };
  const body = Buffer.from(delivery.body_base64, "base64");
  const { id, body: text } = verifyWebhook({ secret: delivery.secret, headers: delivery.headers, body });
  const event = parseAuditCompleted(text);
  check(event.type === "audit.completed", `type ${event.type}`);
  try {
    verifyWebhook({ secret: delivery.secret, headers: delivery.headers, body: Buffer.concat([body, Buffer.from(" ")]) });
    check(false, "a changed body must not verify");
  } catch (err) {
    check(err instanceof WebhookVerificationError && err.reason === "no_matching_signature", `tampered body: ${String(err)}`);
  }
  process.stdout.write(`${JSON.stringify({ event_id: id, audit_id: event.data.auditId, result: event.data.result })}\n`);
}

const [mode, arg] = process.argv.slice(2);
if (mode === "api") await api();
else if (mode === "verify" && arg) verify(arg);
else check(false, `usage: consumer.js api | verify <delivery.json> (got ${mode})`);
