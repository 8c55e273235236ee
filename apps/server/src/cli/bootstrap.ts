import type { Deps } from "../deps.js";
import { DEMO_VOLUME, seedOrg } from "../seed/seed-org.js";
import { PUBLIC_SCOPES } from "../services/tokens.service.js";

/**
 * First start on an empty embedded database: a demo org with sample data and one token with
 * every public scope, printed once. Never on PostgreSQL, where orgs are created on purpose.
 */
export async function bootstrapDemo(deps: Deps, print: (text: string) => void): Promise<boolean> {
  if (deps.config.databaseUrl || (await deps.services.tokens.countOrgs()) > 0) return false;
  const org = await deps.services.tokens.createOrg("Demo clinic");
  await seedOrg(deps.services, org.id, DEMO_VOLUME);
  const { token } = await deps.services.tokens.createToken(org.id, PUBLIC_SCOPES, "demo");
  print(
    [
      "",
      "First start: created the demo org with sample question sets and coding evaluations.",
      `  org:   ${org.id}`,
      `  token: ${token}`,
      "This token (all public scopes) is shown only now. Try:",
      `  curl -H 'Authorization: Bearer ${token}' http://localhost:${deps.config.port}/v2/question_sets?limit=2`,
      "",
    ].join("\n"),
  );
  return true;
}
