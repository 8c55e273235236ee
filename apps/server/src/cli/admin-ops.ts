// What the CLI's database commands do, in one place for both routes: run in the command's own
// process (PostgreSQL, or an embedded database nobody holds) or by a running `serve` that
// received the request on its admin socket. Requests arrive as untrusted JSON on the socket, so
// they are checked here, and answers are plain JSON (dates as ISO strings) on both routes.
import type { Database } from "../db/client.js";
import { migrate } from "../db/migrate.js";
import { seedOrg, type SeedVolume } from "../seed/seed-org.js";
import type { Services } from "../services/index.js";
import { ALL_SCOPES } from "../services/tokens.service.js";
import { recordOf } from "../lib/narrow.js";
import { UsageError } from "./errors.js";

export type AdminRequest =
  | { op: "migrate" }
  | { op: "orgs.create"; name: string }
  | { op: "orgs.list" }
  | { op: "tokens.create"; org: string; scopes: string[]; name: string }
  | { op: "tokens.list"; org?: string | undefined }
  | { op: "tokens.revoke"; id: string }
  | { op: "seed"; org: string; volume: SeedVolume };

export interface AdminContext {
  db: Database;
  services: Services;
}

export interface OrgJson {
  id: string;
  name: string;
  created_at: string;
}

export interface TokenJson {
  id: string;
  org_id: string;
  name: string;
  scopes: string[];
  created_at: string;
  revoked_at: string | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** PostgreSQL cannot store NUL; other control characters in a label are always a mistake. */
const CONTROL = /[\u0000-\u001f\u007f]/;
const MAX_SEED_ROWS = 1_000_000;

function text(value: unknown, what: string, max = 200): string {
  if (typeof value !== "string" || value.trim() === "") throw new UsageError(`${what} must not be empty`);
  if (value.length > max) throw new UsageError(`${what} is longer than ${max} characters`);
  if (CONTROL.test(value)) throw new UsageError(`${what} must not contain control characters`);
  return value;
}

export function tokenId(value: unknown): string {
  if (typeof value !== "string" || !UUID.test(value)) {
    throw new UsageError(`malformed token id ${JSON.stringify(value)}: expected a UUID as shown by \`tokens list\``);
  }
  return value.toLowerCase();
}

function count(value: unknown, what: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > MAX_SEED_ROWS) {
    throw new UsageError(`${what} must be a whole number from 0 to ${MAX_SEED_ROWS}`);
  }
  return value;
}

export function scopeList(value: unknown): string[] {
  const scopes = Array.isArray(value) ? value : [];
  if (!scopes.length || !scopes.every((s): s is string => typeof s === "string")) throw new UsageError("scopes must be a non-empty list");
  const unknown = scopes.filter((s) => !ALL_SCOPES.includes(s));
  if (unknown.length) throw new UsageError(`unknown scope(s): ${unknown.join(", ")}; known: ${ALL_SCOPES.join(", ")}`);
  return [...new Set(scopes)];
}

async function existingOrg(services: Services, value: unknown): Promise<string> {
  const id = text(value, "org id");
  if (!(await services.tokens.findOrg(id))) throw new UsageError(`no org with id ${id} (\`orgs list\` shows them)`);
  return id;
}

const orgJson = (o: { id: string; name: string; created_at: Date }): OrgJson => ({ id: o.id, name: o.name, created_at: o.created_at.toISOString() });

/** Also run on its own: a migrate command must not find the database already migrated by its opening. */
export async function migrateOp(db: Database) {
  const result = await migrate(db);
  return { applied: result.applied, modified_after_apply: result.modifiedAfterApply };
}

/** Checks a request (from the CLI or the socket) and carries it out. */
export async function runAdminOp(ctx: AdminContext, request: unknown): Promise<unknown> {
  const req = recordOf(request);
  const { services } = ctx;
  switch (req.op) {
    case "migrate":
      return migrateOp(ctx.db);
    case "orgs.create":
      return orgJson(await services.tokens.createOrg(text(req.name, "name")));
    case "orgs.list":
      return (await services.tokens.listOrgs()).map(orgJson);
    case "tokens.create": {
      const scopes = scopeList(req.scopes);
      const name = text(req.name, "name");
      const org = await existingOrg(services, req.org);
      const { id, token } = await services.tokens.createToken(org, scopes, name);
      return { id, org_id: org, name, scopes, token };
    }
    case "tokens.list": {
      const org = req.org === undefined ? undefined : await existingOrg(services, req.org);
      return (await services.tokens.list(org)).map(
        (t): TokenJson => ({
          id: t.id,
          org_id: t.org_id,
          name: t.name,
          scopes: t.scopes,
          created_at: t.created_at.toISOString(),
          revoked_at: t.revoked_at ? t.revoked_at.toISOString() : null,
        }),
      );
    }
    case "tokens.revoke": {
      const id = tokenId(req.id);
      if (!(await services.tokens.revoke(id))) throw new UsageError(`no active token with id ${id}`);
      return { id, revoked: true };
    }
    case "seed": {
      const volume = recordOf(req.volume);
      const checked: SeedVolume = {
        questionSets: count(volume.questionSets, "--question-sets"),
        questionsPerSet: count(volume.questionsPerSet, "--questions-per-set"),
        codingEvaluations: count(volume.codingEvaluations, "--coding-evaluations"),
      };
      const org = await existingOrg(services, req.org);
      return { org_id: org, rows: await seedOrg(services, org, checked) };
    }
    default:
      throw new UsageError(`unknown admin operation ${JSON.stringify(req.op)}`);
  }
}
