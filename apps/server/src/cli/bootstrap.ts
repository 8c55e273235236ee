import { isAbsolute, relative } from "node:path";
import type { Deps } from "../deps.js";
import { DEMO_VOLUME, seedOrg } from "../seed/seed-org.js";
import { PUBLIC_SCOPES } from "../services/tokens.service.js";

export interface DemoOrg {
  orgId: string;
  token: string;
}

/**
 * First start on an empty embedded database: a demo org with sample data and one token with
 * every public scope, returned to be printed once. Never on PostgreSQL, where orgs are created
 * on purpose.
 */
export async function bootstrapDemo(deps: Deps): Promise<DemoOrg | null> {
  if (deps.config.databaseUrl || (await deps.services.tokens.countOrgs()) > 0) return null;
  const org = await deps.services.tokens.createOrg("Demo clinic");
  await seedOrg(deps.services, org.id, DEMO_VOLUME);
  const { token } = await deps.services.tokens.createToken(org.id, PUBLIC_SCOPES, "demo");
  return { orgId: org.id, token };
}

export function demoMessage(demo: DemoOrg, port: number): string {
  return [
    "",
    "First start: created the demo org with sample question sets and coding evaluations.",
    `  org:   ${demo.orgId}`,
    `  token: ${demo.token}`,
    "This token (all public scopes) is shown only now. The docs' samples and ars-listen read it from the environment:",
    `  export ARS_API_URL=http://localhost:${port} ARS_TOKEN=${demo.token}`,
    `  curl -H "Authorization: Bearer $ARS_TOKEN" "$ARS_API_URL/v2/question_sets?limit=2"`,
    `The API reference, with its quick start: http://localhost:${port}/docs`,
    "",
  ].join("\n");
}

/**
 * The command line that reaches this server's database from another shell: the same entry
 * point (relative when below the working directory) and ARS_DATA_DIR when the user set it.
 */
export function cliInvocation(env: NodeJS.ProcessEnv, entry = process.argv[1] ?? "ars", cwd = process.cwd()): string {
  const rel = relative(cwd, entry);
  const script = rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : entry;
  const prefix = !env.DATABASE_URL && env.ARS_DATA_DIR ? `ARS_DATA_DIR=${JSON.stringify(env.ARS_DATA_DIR)} ` : "";
  return `${prefix}node ${script}`;
}

/** Later starts: how to mint a token, as a command to copy (the first org, or how to make one). */
export async function mintCommand(deps: Deps, cli: string): Promise<string> {
  const orgs = await deps.services.tokens.listOrgs();
  const first = orgs[0];
  return first ? `${cli} tokens create --org ${first.id}` : `${cli} orgs create --name "My org"   (then: ${cli} tokens create --org <the printed id>)`;
}
