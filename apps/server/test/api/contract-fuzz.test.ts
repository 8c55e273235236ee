// The property-based contract test (the contract's "Input rules": no request answers 5xx): requests generated from openapi.yaml for
// every operation, internal ones included, valid and broken, against the real server. Fixed
// seed and count here; `npx tsx scripts/fuzz.ts --runs N --seed S` runs more on demand.
import { describe, expect, it } from "vitest";
import { SPEC_PATH } from "../../src/lib/paths.js";
import { ALL_SCOPES } from "../../src/services/tokens.service.js";
import { fuzzContract, loadSpec } from "../fuzz/contract-fuzz.js";
import { operations } from "../fuzz/contract-requests.js";
import { useApiServer } from "../harness/factories.js";
import { everyNameResolves } from "../fuzz/resolver.js";

const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const RUNS = Number(process.env.FUZZ_RUNS ?? 5000);

const server = await useApiServer({ resolver: everyNameResolves });

describe("contract fuzzing", () => {
  it(`when ${RUNS} generated requests (seed ${SEED}) hit every operation, then none answers 5xx or outside the contract, and every 400 names a parameter`, async () => {
    const { token, orgId } = await server.newOrg(ALL_SCOPES);
    const weakToken = await server.token(orgId, ["webhooks:read"]);
    const stats = await fuzzContract({ specPath: SPEC_PATH, baseUrl: server.url, token, weakToken, seed: SEED, numRuns: RUNS });

    expect(stats.requests).toBeGreaterThanOrEqual(RUNS);
    const ops = operations(loadSpec(SPEC_PATH)).map((o) => o.operationId);
    for (const op of ops) {
      const sent = Object.values(stats.byOperation[op] ?? {}).reduce((a, b) => a + b, 0);
      expect(sent, `${op} got too few requests: ${JSON.stringify(stats.byOperation)}`).toBeGreaterThanOrEqual(Math.floor(RUNS / ops.length / 3));
    }
    // valid requests succeed too, not only refusals
    const succeeded = Object.values(stats.byOperation).filter((byStatus) => Object.keys(byStatus).some((s) => s.startsWith("2")));
    expect(succeeded.length, JSON.stringify(stats.byOperation)).toBeGreaterThanOrEqual(Math.ceil(ops.length / 2));
    console.log(`contract fuzz: ${stats.requests} requests, seed ${SEED}: ${JSON.stringify(stats.byOperation)}`);
  }, 600_000);
});
