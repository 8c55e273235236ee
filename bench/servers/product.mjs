// The product server, from the built code (apps/server/dist), in its own process so its RSS can
// be read and it does not share an event loop with the load generator. Configured as in
// production: rate limit off (the bench is one token), response validation off. Options arrive
// as JSON in BENCH_SERVER_OPTIONS; the URL goes back over IPC.
import { readFileSync } from "node:fs";
import { loadServer } from "../lib/pkg.mjs";

const opts = JSON.parse(process.env.BENCH_SERVER_OPTIONS ?? "{}");
const server = await loadServer();
const { extraCaFile, ...rest } = opts;
const running = await server.startServer({
  port: 0,
  host: "127.0.0.1",
  rateLimitPerMinute: 0,
  validateResponses: false,
  dispatcher: false,
  logLevel: "warn",
  ...rest,
  ...(extraCaFile && { extraCa: readFileSync(extraCaFile, "utf8") }),
});
process.send?.({ ready: true, url: running.url, pid: process.pid });
// the bench asks for the heap split when it sees a new RSS peak
process.on("message", (m) => {
  if (m?.type === "mem") process.send({ type: "mem", seq: m.seq, ...process.memoryUsage() });
});

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  // A clean exit, so --cpu-prof writes its profile.
  const hard = setTimeout(() => process.exit(1), 10_000);
  hard.unref();
  running.close().finally(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.on("disconnect", stop);
