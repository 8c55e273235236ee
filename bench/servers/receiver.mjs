// The loopback HTTPS receiver of the dispatcher bench: answers 200 at once and records, per
// request, the arrival time (epoch ms, sub-ms precision, comparable across processes), the
// `webhook-id` and which endpoint it was for (the Host name). It checks the Standard Webhooks
// signature of the first request per endpoint once it knows the secrets, so the bench cannot
// pass on unsigned or wrongly signed requests. Key and certificate (PEM) arrive in the environment.
import { createHmac } from "node:crypto";
import { once } from "node:events";
import { createServer } from "node:https";

const now = () => performance.timeOrigin + performance.now();

let hits = []; // [webhookId, host, arrivalMs]
let secrets = new Map(); // host → whsec_…
const checked = new Set();
let badSignatures = 0;
let connections = 0;

function verify(host, id, timestamp, body, header) {
  const secret = secrets.get(host);
  if (!secret) return;
  checked.add(host);
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const expected = `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`;
  if (!String(header).split(" ").includes(expected)) badSignatures++;
}

const server = createServer({ key: process.env.BENCH_RECEIVER_KEY, cert: process.env.BENCH_RECEIVER_CERT, keepAliveTimeout: 60_000 }, (req, res) => {
  const at = now();
  const host = (req.headers.host ?? "").replace(/:\d+$/, "");
  const id = req.headers["webhook-id"];
  hits.push([id, host, at]);
  if (!checked.has(host) && secrets.has(host)) {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => verify(host, id, req.headers["webhook-timestamp"], Buffer.concat(chunks).toString("utf8"), req.headers["webhook-signature"]));
  } else {
    req.resume();
  }
  res.writeHead(200, { "content-length": "0" });
  res.end();
});
server.on("secureConnection", () => connections++);
server.listen(0, "127.0.0.1");
await once(server, "listening");
process.send({ ready: true, port: server.address().port, pid: process.pid });

process.on("message", (m) => {
  if (m.type === "secrets") {
    secrets = new Map(Object.entries(m.secrets));
    checked.clear();
  } else if (m.type === "count") {
    process.send({ type: "count", n: hits.length, seq: m.seq });
  } else if (m.type === "take") {
    // Hands over everything recorded so far and starts a new recording.
    process.send({ type: "hits", hits, badSignatures, checked: [...checked], connections, seq: m.seq });
    hits = [];
    badSignatures = 0;
    checked.clear();
  }
});
process.on("disconnect", () => process.exit(0));
process.on("SIGTERM", () => process.exit(0));
