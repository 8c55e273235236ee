#!/usr/bin/env node
// ars-listen: forwards a webhook listener's deliveries to a receiver on your machine.
//
//   ars-listen --forward-to http://localhost:4242/webhooks    (ARS_TOKEN with webhooks:write)
//   ars-listen --print-secret                                  (the signing secret, then exit)
import { parseArgs } from "node:util";
import type { AuditResultFilter, CreateWebhookListenerRequest, EventType, PayloadField, ResponsesFilter, ResultFormat } from "@audit-review/api-types";
import { createClient } from "../client.js";
import { ApiError } from "../errors.js";
import { createListener, listen } from "../listen/session.js";

const HELP = `Usage: ars-listen --forward-to <url> [options]
       ars-listen --print-secret [options]

Registers a webhook listener with the Audit Review Service and forwards each of its deliveries
(exact body, webhook-* signature headers) to a receiver on your machine, then reports the
receiver's answer back, so every attempt shows in GET /v2/webhook_deliveries. The first line
printed gives the signing secret: verify with verifyWebhook from @audit-review/client/webhooks.
It is the same on every run with the same token.

Options:
  --forward-to <url>            the local receiver (http:// or https://)
  --print-secret                print the signing secret and exit
  --api-url <url>               the API (env ARS_API_URL; default http://localhost:3000)
  --token <token>               a token with webhooks:write (env ARS_TOKEN)
  --events <types>              comma-separated event types (default: audit.completed)
  --question-set-ids <ids>      only events of these question sets (default: every set)
  --audit-results <r>           all (default), passed or failed
  --payload-fields <fields>     comma-separated payload fields (default: all six)
  --result-format <f>           normalized (default) or raw
  --responses-filter <f>        all (default) or failed
  --include-informational       include informational questions
  --legacy-signature            add x-signature-256
  --description <text>          the listener's description
  --idle-timeout <seconds>      take a stream that brought nothing, not even the server's
                                10-second keep-alive, for this long as dropped and reconnect (30)
  -h, --help                    this help
`;

class UsageError extends Error {}

const list = (v: string | undefined) => (v === undefined ? undefined : v.split(",").map((s) => s.trim()).filter(Boolean));

function oneOf<const T extends string>(name: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  const found = allowed.find((a) => a === value);
  if (!found) throw new UsageError(`--${name} must be one of ${allowed.join(", ")}`);
  return found;
}

function listenerBody(v: Record<string, string | boolean | undefined>): CreateWebhookListenerRequest {
  const str = (k: string) => (typeof v[k] === "string" ? v[k] : undefined);
  const body: CreateWebhookListenerRequest = {};
  const events = list(str("events"));
  if (events) body.event_types = events.map((e) => oneOf<EventType>("events", e, ["audit.completed"])!);
  const sets = list(str("question-set-ids"));
  const results = oneOf<AuditResultFilter>("audit-results", str("audit-results"), ["all", "passed", "failed"]);
  if (sets || results) body.filters = { ...(sets && { question_set_ids: sets }), ...(results && { audit_results: results }) };
  const fields = list(str("payload-fields"));
  const resultFormat = oneOf<ResultFormat>("result-format", str("result-format"), ["normalized", "raw"]);
  const responsesFilter = oneOf<ResponsesFilter>("responses-filter", str("responses-filter"), ["all", "failed"]);
  const payloadFields: PayloadField[] = ["data.documentId", "data.result", "responses", "responses.query", "responses.answer", "responses.context"];
  if (fields || resultFormat || responsesFilter || v["include-informational"]) {
    body.payload = {
      ...(fields && { fields: fields.map((f) => oneOf<PayloadField>("payload-fields", f, payloadFields)!) }),
      ...(resultFormat && { result_format: resultFormat }),
      ...(responsesFilter && { responses_filter: responsesFilter }),
      ...(v["include-informational"] === true && { include_informational_questions: true }),
    };
  }
  if (v["legacy-signature"] === true) body.signing = { legacy_signature: true };
  const description = str("description");
  if (description !== undefined) body.description = description;
  return body;
}

function checkUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`--forward-to ${value} is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError("--forward-to must be an http:// or https:// URL");
  return url.toString();
}

const time = () => new Date().toISOString();

function idleTimeout(value: string | boolean | undefined): number | undefined {
  if (typeof value !== "string") return undefined;
  const seconds = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || seconds < 1) throw new UsageError("--idle-timeout must be a number of seconds, at least 1");
  return seconds * 1000;
}

function eventTypeOf(body: string): string {
  try {
    const v: unknown = JSON.parse(body);
    const type: unknown = typeof v === "object" && v !== null ? Reflect.get(v, "type") : undefined;
    return typeof type === "string" ? type : "?";
  } catch {
    return "?";
  }
}

async function main(argv: string[]): Promise<number> {
  const { values: v } = parseArgs({
    args: argv,
    options: {
      "forward-to": { type: "string" },
      "print-secret": { type: "boolean" },
      "idle-timeout": { type: "string" },
      "api-url": { type: "string" },
      token: { type: "string" },
      events: { type: "string" },
      "question-set-ids": { type: "string" },
      "audit-results": { type: "string" },
      "payload-fields": { type: "string" },
      "result-format": { type: "string" },
      "responses-filter": { type: "string" },
      "include-informational": { type: "boolean" },
      "legacy-signature": { type: "boolean" },
      description: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (v.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const apiUrl = v["api-url"] ?? process.env.ARS_API_URL ?? "http://localhost:3000";
  const token = v.token ?? process.env.ARS_TOKEN;
  if (!token) throw new UsageError("a token is needed: --token or ARS_TOKEN (scope webhooks:write)");
  const body = listenerBody(v);

  if (v["print-secret"]) {
    // the secret is the token's: registering and removing a listener tells it
    const client = createClient({ baseUrl: apiUrl, token });
    const listener = await createListener(client, body);
    await client.deleteWebhookEndpoint(listener.id).catch(() => undefined);
    process.stdout.write(`${listener.secret}\n`);
    return 0;
  }
  if (!v["forward-to"]) throw new UsageError("--forward-to <url> is required (or --print-secret)");
  const forwardTo = checkUrl(v["forward-to"]);

  const stop = new AbortController();
  for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => stop.abort());
  await listen(
    { apiUrl, token, forwardTo, listener: body, signal: stop.signal, idleTimeoutMs: idleTimeout(v["idle-timeout"]) },
    {
      registered(listener) {
        process.stdout.write(`Ready! Your webhook signing secret is ${listener.secret} (listener ${listener.id}; ^C to quit)\n`);
      },
      connected(listenerId, again) {
        process.stderr.write(`${time()}  ${again ? "reconnected" : "connected"}: forwarding deliveries of ${listenerId} to ${forwardTo}\n`);
      },
      delivered(req, answer) {
        const outcome = answer.status !== undefined ? String(answer.status) : `${answer.error?.code ?? "error"} (${answer.error?.message ?? ""})`;
        process.stdout.write(`${time()}  ${eventTypeOf(req.body)}  ${req.headers["webhook-id"] ?? "?"}  ${outcome}  ${answer.duration_ms} ms\n`);
      },
      disconnected(reason, retryInMs) {
        process.stderr.write(`${time()}  stream lost (${reason}); reconnecting in ${retryInMs} ms\n`);
      },
    },
  );
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    const message = err instanceof UsageError || err instanceof ApiError || err instanceof Error ? err.message : String(err);
    process.stderr.write(`ars-listen: ${message}\n`);
    process.exit(err instanceof UsageError || (err instanceof Error && err.name === "TypeError" && err.message.includes("Unknown option")) ? 2 : 1);
  },
);
