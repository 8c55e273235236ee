// `npx tsx scripts/fuzz.ts [--runs N] [--seed S] [--database-url URL]`: the contract fuzzer of
// apps/server/test/api/contract-fuzz.test.ts with any seed and count, against a freshly started
// server (embedded in-memory database, or a PostgreSQL database you give it, migrated first).
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { fuzzContract } from "../apps/server/test/fuzz/contract-fuzz.js";
import { everyNameResolves } from "../apps/server/test/fuzz/resolver.js";
import { createLogger } from "../apps/server/src/lib/logger.js";
import { SPEC_PATH } from "../apps/server/src/lib/paths.js";
import { startServer } from "../apps/server/src/server.js";
import { ALL_SCOPES } from "../apps/server/src/services/tokens.service.js";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "20000" },
    seed: { type: "string", default: String(Date.now() % 2 ** 31) },
    "database-url": { type: "string" },
  },
});
const seed = Number(values.seed);
const numRuns = Number(values.runs);
const databaseUrl = values["database-url"];

const server = await startServer({
  port: 0,
  host: "127.0.0.1",
  ...(databaseUrl ? { databaseUrl, migrate: true } : { inMemory: true }),
  encryptionKey: randomBytes(32).toString("base64"),
  validateResponses: true,
  rateLimitPerMinute: 0,
  dispatcher: false,
  resolver: everyNameResolves,
  logger: createLogger({ level: "fatal" }),
});
const started = Date.now();
try {
  const org = await server.services.tokens.createOrg(`fuzz-${seed}`);
  const { token } = await server.services.tokens.createToken(org.id, ALL_SCOPES, "fuzz");
  const { token: weakToken } = await server.services.tokens.createToken(org.id, ["webhooks:read"], "fuzz-weak");
  console.log(`fuzzing ${server.url} (${databaseUrl ? "PostgreSQL" : "embedded PGlite"}): ${numRuns} requests, seed ${seed}`);
  const stats = await fuzzContract({ specPath: SPEC_PATH, baseUrl: server.url, token, weakToken, seed, numRuns });
  console.log(`ok: ${stats.requests} requests in ${((Date.now() - started) / 1000).toFixed(1)} s; statuses by operation:`);
  for (const [op, byStatus] of Object.entries(stats.byOperation).sort()) console.log(`  ${op.padEnd(28)} ${JSON.stringify(byStatus)}`);
} catch (err) {
  console.error(`FAILED (seed ${seed}; rerun with --seed ${seed} --runs ${numRuns}):\n${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
} finally {
  await server.close();
}
