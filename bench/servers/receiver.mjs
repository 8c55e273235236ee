// The loopback HTTPS receiver of the dispatcher bench (the test kit's receiver, recording
// nothing itself): answers 200 and records, per request, the arrival time (epoch ms, sub-ms
// precision, comparable across processes), the `webhook-id` and which endpoint it was for (the
// Host name). It checks the Standard Webhooks signature of the first request per endpoint once it
// knows the secrets, so the bench cannot pass on unsigned or wrongly signed requests. Key and
// certificate (PEM) arrive in the environment; BENCH_RECEIVER_DELAYS (JSON, Host name → ms)
// makes the answers to some hosts slow.
import { createHmac } from "node:crypto";
import { startReceiver } from "@audit-review/test-kit/receiver";

let hits = []; // [webhookId, host, arrivalMs]
let secrets = new Map(); // host → whsec_…
const checked = new Set();
let badSignatures = 0;
const delays = new Map(Object.entries(JSON.parse(process.env.BENCH_RECEIVER_DELAYS ?? "{}")));

function verify(host, id, timestamp, body, header) {
  const secret = secrets.get(host);
  if (!secret) return;
  checked.add(host);
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const expected = `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`;
  if (!String(header).split(" ").includes(expected)) badSignatures++;
}

const receiver = await startReceiver({
  tls: { key: process.env.BENCH_RECEIVER_KEY, cert: process.env.BENCH_RECEIVER_CERT },
  record: false,
  keepAliveTimeout: 60_000,
  handler(req, res) {
    const host = (req.headers.host ?? "").replace(/:\d+$/, "");
    const id = req.headers["webhook-id"];
    hits.push([id, host, req.arrivedAt]);
    if (!checked.has(host) && secrets.has(host)) verify(host, id, req.headers["webhook-timestamp"], req.body, req.headers["webhook-signature"]);
    const answer = () => res.writeHead(200, { "content-length": "0" }).end();
    const delay = delays.get(host);
    if (delay) setTimeout(answer, delay);
    else answer();
  },
});
process.send({ ready: true, port: receiver.port, pid: process.pid });

process.on("message", (m) => {
  if (m.type === "secrets") {
    secrets = new Map(Object.entries(m.secrets));
    checked.clear();
  } else if (m.type === "count") {
    // `hosts`: count only the requests for these names
    const n = m.hosts ? hits.filter((h) => m.hosts.includes(h[1])).length : hits.length;
    process.send({ type: "count", n, seq: m.seq });
  } else if (m.type === "take") {
    // Hands over everything recorded so far and starts a new recording.
    process.send({ type: "hits", hits, badSignatures, checked: [...checked], connections: receiver.connections, seq: m.seq });
    hits = [];
    badSignatures = 0;
    checked.clear();
  }
});
process.on("disconnect", () => process.exit(0));
process.on("SIGTERM", () => process.exit(0));
