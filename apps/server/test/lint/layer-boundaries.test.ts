import { fileURLToPath } from "node:url";
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

// The layer rules live in eslint.config.js as import patterns; a typo in a pattern would silently
// allow everything. This runs the real config over one-line files placed in each layer.
const root = fileURLToPath(new URL("../../../../", import.meta.url));
const BOUNDARY_RULES = ["@typescript-eslint/no-restricted-imports", "no-restricted-syntax"];
const eslint = new ESLint({
  cwd: root,
  // Only the boundary rules (imports, and the wall clock): they need no type information, so no
  // TypeScript program is built.
  ruleFilter: ({ ruleId }) => BOUNDARY_RULES.includes(ruleId),
  overrideConfig: { languageOptions: { parserOptions: { project: null, projectService: false } } },
});

async function refused(file: string, code: string): Promise<boolean> {
  const [result] = await eslint.lintText(`${code}\nexport {};\n`, { filePath: `${root}apps/server/src/${file}` });
  return (result?.messages ?? []).some((m) => m.ruleId !== null && BOUNDARY_RULES.includes(m.ruleId));
}

describe("the server's layer boundaries (eslint.config.js)", () => {
  it.each([
    ["services/x.service.ts", 'import { authOf } from "../http/context.js";', "a service reaching into HTTP"],
    ["services/x.service.ts", 'import { signPayload } from "../delivery/signing.js";', "a service reaching into the engine"],
    ["services/x.service.ts", 'import { Prisma } from "../generated/prisma/client.js";', "Prisma at run time outside repos/ and db/"],
    ["repos/x.repo.ts", 'import { decide } from "../delivery/outcome.js";', "a repository importing the engine above it"],
    ["repos/x.repo.ts", 'import { x } from "../services/index.js";', "a repository importing services"],
    ["presenters/x.presenter.ts", 'import type { Row } from "../repos/x.repo.js";', "a presenter importing a repository's types"],
    ["routes/x.routes.ts", 'import { send } from "../delivery/sender.js";', "the sender outside delivery/"],
    ["lib/x.ts", 'import { x } from "../services/index.js";', "a leaf utility importing a layer"],
    ["net/x.ts", 'import { x } from "../db/client.js";', "a leaf utility importing the database"],
    ["db/x.ts", 'import { x } from "../repos/keyset.js";', "the database layer importing repositories"],
    ["http/x.ts", 'import { x } from "../repos/tokens.repo.js";', "HTTP middleware skipping services"],
    ["config.ts", 'import { x } from "./delivery/retry-schedule.js";', "config importing the engine"],
    ["worker.ts", 'import { startServer } from "./server.js";', "the worker loading the HTTP server"],
    ["start-options.ts", 'import { buildApp } from "./app.js";', "the roles' options loading the Express app"],
    ["deps.ts", 'import { x } from "./http/problem.js";', "the composition root shared with the worker loading HTTP"],
    ["http/x.ts", 'import { parse } from "yaml";', "a second reader of the contract"],
    ["server.ts", 'import { parse } from "yaml";', "a second reader of the contract outside any layer"],
    ["http/x.ts", 'import { pathToRegexp } from "path-to-regexp";', "a second path matcher"],
    ["lib/x.ts", 'import { loadContract } from "../contract/contract.js";', "a leaf utility reading the contract"],
    ["delivery/x.ts", 'import { loadContract } from "../contract/contract.js";', "the engine reading the contract"],
    ["housekeeping/x.ts", 'import { send } from "../delivery/sender.js";', "housekeeping sending webhooks"],
    ["housekeeping/x.ts", 'import { x } from "../services/index.js";', "housekeeping reaching into use cases"],
    ["housekeeping/x.ts", 'import { Prisma } from "../generated/prisma/client.js";', "housekeeping using Prisma at run time"],
    ["services/x.service.ts", 'import { x } from "../housekeeping/housekeeper.js";', "a service starting housekeeping"],
    ["delivery/x.ts", 'import { x } from "../metrics/delivery.js";', "the engine importing the metrics it reports to"],
    ["repos/x.repo.ts", 'import { x } from "../metrics/registry.js";', "a repository importing metrics"],
    ["metrics/x.ts", 'import { x } from "../http/request-metrics.js";', "metrics importing HTTP"],
    ["metrics/x.ts", 'import { x } from "../services/index.js";', "metrics importing services"],
    ["domain/x.ts", 'import { x } from "../repos/deliveries-queue.repo.js";', "a delivery rule importing the repository that applies it"],
    ["domain/x.ts", 'import { x } from "../delivery/retry-schedule.js";', "a delivery rule importing the engine"],
    ["domain/x.ts", 'import { x } from "../db/client.js";', "a delivery rule touching the database"],
    ["domain/x.ts", 'import { Prisma } from "../generated/prisma/client.js";', "a delivery rule using Prisma at run time"],
    ["lib/x.ts", 'import { x } from "../domain/delivery/endpoint-health.js";', "a leaf utility importing the delivery rules"],
    ["domain/delivery/x.ts", 'import { x } from "../../delivery/retry-schedule.js";', "a lifecycle rule importing the engine, from a subfolder"],
    ["domain/delivery/x.ts", 'import { x } from "../../repos/delivery-sql.js";', "a lifecycle rule importing the repositories that apply it"],
    ["clock/x.ts", 'import { x } from "../db/client.js";', "the clock importing the database layer (it takes a query function)"],
    ["clock/x.ts", 'import { x } from "../domain/retention.js";', "the clock importing a rule"],
    ["repos/x.repo.ts", "export const at = () => new Date();", "a repository reading this host's wall clock"],
    ["delivery/x.ts", "export const at = () => Date.now();", "the engine reading this host's wall clock"],
    ["housekeeping/x.ts", "export const at = () => new Date();", "housekeeping reading this host's wall clock"],
    ["services/x.service.ts", "export const at = Date.now;", "a use case reading this host's wall clock"],
    ["domain/x.ts", "export const at = () => new Date();", "a rule reading this host's wall clock"],
  ])("refuses %s: %s (%s)", async (file, code) => {
    expect(await refused(file, code)).toBe(true);
  });

  it.each([
    ["repos/x.repo.ts", 'import { Prisma } from "../generated/prisma/client.js";'],
    ["db/x.ts", 'import { PrismaClient } from "../generated/prisma/client.js";'],
    ["services/x.service.ts", 'import type { Question } from "../generated/prisma/client.js";'],
    ["presenters/x.presenter.ts", 'import type { WebhookEndpoint } from "../generated/prisma/client.js";'],
    ["services/x.service.ts", 'import { x } from "../repos/tokens.repo.js";'],
    ["delivery/x.ts", 'import { send } from "./sender.js";'],
    ["delivery/x.ts", 'import { x } from "../repos/deliveries-queue.repo.js";'],
    ["routes/x.routes.ts", 'import { x } from "../services/index.js";'],
    ["routes/x.routes.ts", 'import { x } from "../presenters/x.presenter.js";'],
    ["contract/x.ts", 'import { parse } from "yaml";'],
    ["http/x.ts", 'import type { Contract } from "../contract/contract.js";'],
    ["server.ts", 'import { loadContract } from "./contract/contract.js";'],
    ["housekeeping/x.ts", 'import { x } from "../repos/partitions.repo.js";'],
    ["housekeeping/x.ts", 'import { every } from "../clock/clock.js";'],
    ["repos/x.repo.ts", 'import type { Clock } from "../clock/clock.js";'],
    ["repos/x.repo.ts", "export const day = (ms: number) => new Date(ms - (ms % 86_400_000));"],
    ["http/x.ts", "export const at = () => Date.now();"],
    ["metrics/x.ts", 'import { x } from "../repos/queue-stats.repo.js";'],
    ["http/x.ts", 'import type { x } from "../metrics/http-requests.js";'],
    ["repos/x.repo.ts", 'import { x } from "../domain/delivery/endpoint-health.js";'],
    ["repos/x.repo.ts", 'import { x } from "../domain/delivery/status.js";'],
    ["services/x.service.ts", 'import { x } from "../domain/delivery/requeue.js";'],
    ["delivery/x.ts", 'import { x } from "../domain/delivery/outcome.js";'],
    ["delivery/transports/x.ts", 'import { x } from "../../domain/delivery/answer.js";'],
    ["domain/x.ts", 'import { x } from "../lib/narrow.js";'],
    ["domain/x.ts", 'import type { WebhookEndpoint } from "../generated/prisma/client.js";'],
  ])("allows %s: %s", async (file, code) => {
    expect(await refused(file, code)).toBe(false);
  });
});
