// Baseline of the dispatcher bench: the same signed requests (Standard Webhooks headers, the
// same standard_v1 body built and signed per request) sent with undici to the same receiver at
// the dispatcher's effective concurrency, with no database, no queue, no bookkeeping: what
// HTTPS + JSON + HMAC alone cost on this machine. Parameters arrive over IPC.
import { createHmac } from "node:crypto";
import { once } from "node:events";
import { Agent } from "undici";
import { makeEvent } from "../lib/events.mjs";

process.send({ ready: true, pid: process.pid });
const [job] = await once(process, "message");
const { ca, port, endpoints, eventCount, eventSet, concurrency, userAgent } = job;
const questions = eventSet.questions;
const events = Array.from({ length: eventCount }, (_, i) => makeEvent(i, eventSet));

const agent = new Agent({
  connect: {
    ca,
    // the receiver's names all live on 127.0.0.1 (Node 20 asks with { all: true })
    lookup: (_host, opts, cb) => (opts.all ? cb(null, [{ address: "127.0.0.1", family: 4 }]) : cb(null, "127.0.0.1", 4)),
  },
});
const byId = new Map(questions.map((q) => [q.id, q]));

function body(ev) {
  return JSON.stringify({
    type: "audit.completed",
    timestamp: ev.occurred_at,
    data: { auditId: ev.data.audit_id, questionSetId: ev.data.question_set_id, documentId: ev.data.document_id, result: ev.data.result },
    responses: ev.data.responses
      .filter((r) => byId.get(r.question_id).question_type !== "informational")
      .map((r) => ({ questionId: r.question_id, query: byId.get(r.question_id).query, answer: r.answer, context: r.context })),
  });
}

async function send(ep, ev) {
  const payload = body(ev);
  const ts = Math.floor(Date.now() / 1000);
  const key = Buffer.from(ep.secret.slice("whsec_".length), "base64");
  const signature = `v1,${createHmac("sha256", key).update(`${ev.id}.${ts}.${payload}`).digest("base64")}`;
  const res = await agent.request({
    origin: `https://${ep.host}:${port}`,
    path: "/webhook",
    method: "POST",
    headers: {
      "content-type": "application/json",
      "user-agent": userAgent,
      "webhook-id": ev.id,
      "webhook-timestamp": String(ts),
      "webhook-signature": signature,
    },
    body: payload,
  });
  await res.body.dump();
  if (res.statusCode !== 200) throw new Error(`receiver answered ${res.statusCode}`);
}

// events × endpoints, in the order a fan-out creates them
const jobs = [];
for (const ev of events) for (const ep of endpoints) jobs.push([ep, ev]);
let next = 0;
const started = performance.timeOrigin + performance.now();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < jobs.length) {
      const [ep, ev] = jobs[next++];
      await send(ep, ev);
    }
  }),
);
const finished = performance.timeOrigin + performance.now();
process.send({ type: "done", sent: jobs.length, started, finished });
await agent.close();
process.exit(0);
