// The `ars` command line. Database commands are requests (admin-ops.ts) run wherever the
// database is reachable (target.ts); heavy modules (Express, the validator, the delivery engine,
// PGlite) are imported only by the commands that need them, so a command sent to a running
// server starts in a fraction of a second.
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { ALL_SCOPES, PUBLIC_SCOPES } from "../services/tokens.service.js";
import { arrayOf, recordOf } from "../lib/narrow.js";
import { scopeList, tokenId, type AdminRequest } from "./admin-ops.js";
import { oneLine, UsageError } from "./errors.js";
import { openTarget, type AdminTarget } from "./target.js";

export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: NodeJS.ProcessEnv;
  /** Where database commands run; by default found from the environment (see target.ts). */
  openTarget?: (op: AdminRequest["op"]) => Promise<AdminTarget>;
}

export const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
};

const line = (text: string) => (text.endsWith("\n") ? text : `${text}\n`);

/** commander parsers: a malformed value is a one-line error before any database work. */
const wholeNumber = (v: string) => {
  if (!/^\d{1,7}$/.test(v)) throw new InvalidArgumentError("must be a whole number");
  return Number(v);
};
const asUsage = <T>(check: (v: string) => T) => (v: string) => {
  try {
    return check(v);
  } catch (err) {
    throw new InvalidArgumentError(oneLine(err));
  }
};
const parseScopes = asUsage((v) => scopeList(v.split(",").map((s) => s.trim()).filter(Boolean)));
const parseTokenId = asUsage(tokenId);

/** Stops on SIGTERM/SIGINT: no new connections, in-flight work finishes, then exit. */
function closeOnSignal(io: CliIo, close: () => Promise<void>) {
  const stop = (signal: string) => {
    io.stderr(`${signal}: shutting down\n`);
    close().then(
      () => process.exit(0),
      (err) => {
        io.stderr(`shutdown failed: ${oneLine(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

export function buildProgram(io: CliIo = processIo): Command {
  const program = new Command("ars")
    .description("Audit Review Service: API server, webhook delivery engine and administration")
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr, outputError: (text, write) => write(line(text.trim())) });

  /** Runs one request where the database is, says where on stderr, prints the answer. */
  // The answer may come over the admin socket as JSON, so printers read it as data, not as a type.
  async function execute(request: AdminRequest, json: boolean | undefined, print: (result: unknown) => void) {
    const target = await (io.openTarget ?? ((op) => openTarget(io.env, op)))(request.op);
    io.stderr(`ars: using the ${target.description}\n`);
    try {
      const result = await target.run(request);
      if (json) io.stdout(`${JSON.stringify(result)}\n`);
      else print(result);
    } finally {
      await target.close();
    }
  }

  program
    .command("serve")
    .description("run the API (and the delivery engine unless ARS_DISPATCHER=false); migrates and bootstraps the embedded database")
    .option("--json", "print the start-up summary as one JSON line")
    .action(async (o: { json?: boolean }) => {
      const [{ startServer }, boot, { listenAdminSocket }, { adminSocketPath }, { runAdminOp }] = await Promise.all([
        import("../server.js"),
        import("./bootstrap.js"),
        import("../db/admin-socket.js"),
        import("../db/embedded-lock.js"),
        import("./admin-ops.js"),
      ]);
      const server = await startServer({ migrate: true });
      const { config } = server.deps;
      let admin: Awaited<ReturnType<typeof listenAdminSocket>> | undefined;
      let demo: Awaited<ReturnType<typeof boot.bootstrapDemo>>;
      let mint: string | null;
      try {
        // The embedded database is this process's alone: other commands reach it through this socket.
        admin = server.db.kind === "pglite" && !config.inMemory
          ? await listenAdminSocket(
              adminSocketPath(config.dataDir),
              (request) => {
                // which command ran, never its arguments' secrets (requests carry none, answers may)
                server.deps.logger.info({ op: recordOf(request).op }, "admin command");
                return runAdminOp(server.deps, request);
              },
              oneLine,
            )
          : undefined;
        // before announcing the address: whoever reads it may signal us at once
        closeOnSignal(io, async () => {
          await admin?.close();
          await server.close();
        });
        demo = await boot.bootstrapDemo(server.deps);
        mint = demo ? null : await boot.mintCommand(server.deps, boot.cliInvocation(io.env));
      } catch (err) {
        // a server that cannot finish starting stops, and gives back its port, pools and lock
        await admin?.close().catch(() => undefined);
        await server.close().catch(() => undefined);
        throw err;
      }
      const database = server.db.kind === "pglite" ? `embedded database in ${config.dataDir}` : "PostgreSQL";
      server.deps.logger.info({ url: server.url, database: server.db.kind, dispatcher: config.dispatcher }, "listening");
      if (o.json) {
        io.stdout(`${JSON.stringify({ url: server.url, database: server.db.kind, data_dir: server.db.kind === "pglite" ? config.dataDir : null, admin_socket: admin?.path ?? null, demo: demo && { org_id: demo.orgId, token: demo.token }, mint_command: mint })}\n`);
        return;
      }
      if (demo) io.stdout(line(boot.demoMessage(demo, server.port)));
      else if (mint) io.stdout(line(`To mint a token: ${mint}`));
      io.stdout(line(`Audit Review Service listening on ${server.url} (${database})`));
    });

  program
    .command("worker")
    .description("run only the delivery engine (scale out: any number of workers on one PostgreSQL)")
    .option("--json", "print the start-up notice as JSON")
    .action(async (o: { json?: boolean }) => {
      const { startWorker } = await import("../worker.js");
      const worker = await startWorker({});
      closeOnSignal(io, worker.close);
      io.stdout(o.json ? `${JSON.stringify({ worker: "running" })}\n` : "delivery worker running\n");
    });

  program
    .command("migrate")
    .description("apply pending SQL migrations (DATABASE_URL, or the embedded database)")
    .option("--json", "print {applied, modified_after_apply}")
    .action((o: { json?: boolean }) =>
      execute({ op: "migrate" }, o.json, (r) => {
        const applied = arrayOf(recordOf(r).applied);
        io.stdout(line(applied.length ? `applied: ${applied.join(", ")}` : "database is up to date"));
      }),
    );

  const orgs = program.command("orgs").description("create and list orgs");
  orgs
    .command("create")
    .description("create an org; prints its id")
    .requiredOption("--name <name>", "display name")
    .option("--json", "print the org as JSON")
    .action((o: { name: string; json?: boolean }) =>
      execute({ op: "orgs.create", name: o.name }, o.json, (org) => io.stdout(line(String(recordOf(org).id)))),
    );
  orgs
    .command("list")
    .description("list orgs: id, name, created_at (tab-separated)")
    .option("--json", "print a JSON array")
    .action((o: { json?: boolean }) =>
      execute({ op: "orgs.list" }, o.json, (list) => {
        for (const org of arrayOf(list).map(recordOf)) io.stdout(line(`${org.id}\t${org.name}\t${org.created_at}`));
      }),
    );

  const tokens = program.command("tokens").description("mint, list and revoke API tokens");
  tokens
    .command("create")
    .description("mint a token for an org; prints it once (only its SHA-256 is stored)")
    .requiredOption("--org <id>", "org the token acts for")
    .addOption(
      new Option("--scopes <list>", `comma-separated; known: ${ALL_SCOPES.join(", ")}`).argParser(parseScopes).default([...PUBLIC_SCOPES], PUBLIC_SCOPES.join(",")),
    )
    .option("--name <name>", "label shown by tokens list", "cli")
    .option("--json", "print {id, org_id, name, scopes, token}")
    .action((o: { org: string; scopes: string[]; name: string; json?: boolean }) =>
      execute({ op: "tokens.create", org: o.org, scopes: o.scopes, name: o.name }, o.json, (created) => {
        const t = recordOf(created);
        io.stderr(`token ${t.id} created; it is shown only once:\n`);
        io.stdout(line(String(t.token)));
      }),
    );
  tokens
    .command("list")
    .description("list tokens (never the tokens themselves): id, org, name, scopes, created_at, state")
    .option("--org <id>", "only this org's tokens")
    .option("--json", "print a JSON array")
    .action((o: { org?: string; json?: boolean }) =>
      execute({ op: "tokens.list", org: o.org }, o.json, (list) => {
        for (const t of arrayOf(list).map(recordOf)) {
          io.stdout(line([t.id, t.org_id, t.name, arrayOf(t.scopes).join(","), t.created_at, t.revoked_at ? `revoked ${t.revoked_at}` : "active"].join("\t")));
        }
      }),
    );
  tokens
    .command("revoke")
    .description("revoke a token at once")
    .argument("<id>", "token id (from tokens list)", parseTokenId)
    .option("--json", "print {id, revoked}")
    .action((id: string, o: { json?: boolean }) =>
      execute({ op: "tokens.revoke", id }, o.json, (r) => io.stdout(line(`revoked ${recordOf(r).id}`))),
    );

  program
    .command("seed")
    .description("add sample question sets and coding evaluations to an org")
    .requiredOption("--org <id>", "org to seed")
    .option("--question-sets <n>", "question sets", wholeNumber, 12)
    .option("--questions-per-set <n>", "questions per set", wholeNumber, 8)
    .option("--coding-evaluations <n>", "coding evaluations", wholeNumber, 40)
    .option("--json", "print {org_id, rows}")
    .action((o: { org: string; questionSets: number; questionsPerSet: number; codingEvaluations: number; json?: boolean }) =>
      execute(
        { op: "seed", org: o.org, volume: { questionSets: o.questionSets, questionsPerSet: o.questionsPerSet, codingEvaluations: o.codingEvaluations } },
        o.json,
        (r) => io.stdout(line(`seeded ${recordOf(r).rows} rows`)),
      ),
    );

  return program;
}

/** Runs the command line; resolves to the exit code (long-running roles keep the process alive). */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  try {
    await buildProgram(io).parseAsync([...argv], { from: "user" });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    io.stderr(`error: ${err instanceof UsageError ? err.message : oneLine(err)}\n`);
    return 1;
  }
}
