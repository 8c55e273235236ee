import { Command, InvalidArgumentError } from "commander";
import { loadConfig } from "../config.js";
import { createDeps, type Deps } from "../deps.js";
import { migrate } from "../db/migrate.js";
import { createLogger } from "../lib/logger.js";
import { seedOrg } from "../seed/seed-org.js";
import { startServer } from "../server.js";
import { startWorker } from "../worker.js";
import { ALL_SCOPES, PUBLIC_SCOPES } from "../services/tokens.service.js";
import { bootstrapDemo } from "./bootstrap.js";

const print = (text: string) => process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);

const count = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError("must be a whole number");
  return n;
};

/** Short-lived commands share one shape: open, do, close (logs to stderr, results to stdout). */
async function withDeps<T>(fn: (deps: Deps) => Promise<T>): Promise<T> {
  const config = { ...loadConfig(), dispatcher: false };
  const deps = await createDeps(config, { logger: createLogger({ level: "warn", destination: process.stderr }) });
  try {
    return await fn(deps);
  } finally {
    await deps.close();
  }
}

/** Stops on SIGTERM/SIGINT: no new connections, in-flight work finishes, then exit. */
function closeOnSignal(close: () => Promise<void>) {
  const stop = (signal: string) => {
    process.stderr.write(`${signal}: shutting down\n`);
    close().then(
      () => process.exit(0),
      (err) => {
        process.stderr.write(`shutdown failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

export function buildProgram(): Command {
  const program = new Command("ars")
    .description("Audit Review Service: API server, webhook delivery engine and administration")
    .showHelpAfterError();

  program
    .command("serve")
    .description("run the API (and the delivery engine unless ARS_DISPATCHER=false); migrates and bootstraps the embedded database")
    .action(async () => {
      const server = await startServer({ migrate: true });
      // before announcing the address: whoever reads it may signal us at once
      closeOnSignal(server.close);
      await bootstrapDemo(server.deps, print);
      server.deps.logger.info({ url: server.url, database: server.db.kind, dispatcher: server.deps.config.dispatcher }, "listening");
      print(`Audit Review Service listening on ${server.url} (${server.db.kind === "pglite" ? `embedded database in ${server.deps.config.dataDir}` : "PostgreSQL"})`);
    });

  program
    .command("worker")
    .description("run only the delivery engine (scale out: any number of workers on one PostgreSQL)")
    .action(async () => {
      const worker = await startWorker({});
      closeOnSignal(worker.close);
      print("delivery worker running");
    });

  program
    .command("migrate")
    .description("apply pending SQL migrations (DATABASE_URL, or the embedded database)")
    .action(async () => {
      const config = { ...loadConfig(), dispatcher: false };
      const { openDatabase } = await import("../db/client.js");
      const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
      try {
        const result = await migrate(db);
        print(result.applied.length ? `applied: ${result.applied.join(", ")}` : "database is up to date");
      } finally {
        await db.close();
      }
    });

  const orgs = program.command("orgs").description("manage orgs");
  orgs
    .command("create")
    .requiredOption("--name <name>", "display name")
    .action(({ name }: { name: string }) =>
      withDeps(async (deps) => {
        const org = await deps.services.tokens.createOrg(name);
        print(org.id);
      }),
    );
  orgs.command("list").action(() =>
    withDeps(async (deps) => {
      for (const o of await deps.services.tokens.listOrgs()) print(`${o.id}\t${o.name}\t${o.created_at.toISOString()}`);
    }),
  );

  const tokens = program.command("tokens").description("mint, list and revoke API tokens");
  tokens
    .command("create")
    .requiredOption("--org <id>", "org the token acts for")
    .option("--scopes <list>", `comma-separated; known: ${ALL_SCOPES.join(", ")}`, PUBLIC_SCOPES.join(","))
    .option("--name <name>", "label shown by tokens list", "cli")
    .action((o: { org: string; scopes: string; name: string }) =>
      withDeps(async (deps) => {
        const scopes = o.scopes.split(",").map((s) => s.trim()).filter(Boolean);
        const { id, token } = await deps.services.tokens.createToken(o.org, scopes, o.name);
        process.stderr.write(`token ${id} created; it is shown only once:\n`);
        print(token);
      }),
    );
  tokens
    .command("list")
    .option("--org <id>", "only this org's tokens")
    .action((o: { org?: string }) =>
      withDeps(async (deps) => {
        for (const t of await deps.services.tokens.list(o.org)) {
          print([t.id, t.org_id, t.name, t.scopes.join(","), t.created_at.toISOString(), t.revoked_at ? `revoked ${t.revoked_at.toISOString()}` : "active"].join("\t"));
        }
      }),
    );
  tokens
    .command("revoke")
    .argument("<id>", "token id (from tokens list)")
    .action((id: string) =>
      withDeps(async (deps) => {
        if (!(await deps.services.tokens.revoke(id))) throw new Error(`no active token with id ${id}`);
        print(`revoked ${id}`);
      }),
    );

  program
    .command("seed")
    .description("add sample question sets and coding evaluations to an org")
    .requiredOption("--org <id>", "org to seed")
    .option("--question-sets <n>", "question sets", count, 12)
    .option("--questions-per-set <n>", "questions per set", count, 8)
    .option("--coding-evaluations <n>", "coding evaluations", count, 40)
    .action((o: { org: string; questionSets: number; questionsPerSet: number; codingEvaluations: number }) =>
      withDeps(async (deps) => {
        const n = await seedOrg(
          deps.services,
          o.org,
          { questionSets: o.questionSets, questionsPerSet: o.questionsPerSet, codingEvaluations: o.codingEvaluations },
          (done) => process.stderr.write(`${done} rows\n`),
        );
        print(`seeded ${n} rows`);
      }),
    );

  return program;
}
