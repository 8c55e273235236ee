// A live server for the CI client checks: the real @audit-review/server on an ephemeral port and
// an in-memory database, with an org, a token holding the public scopes, and question sets
// ingested through the internal API. Receiver names resolve through a static table (the server's
// own `staticResolver`, what ARS_STATIC_HOSTS sets up for `serve`), so creating an endpoint
// needs no DNS: PUBLIC_RECEIVER_HOST answers a public address, and `loopbackHosts` may name
// real receivers on 127.0.0.1 (allowed by the explicit ARS_ALLOW_PRIVATE_CIDRS-style allowance).
import { createOrg, createToken, PUBLIC_SCOPES, startServer, staticResolver } from "@audit-review/server";
import { resolverTable, testServerOptions } from "@audit-review/test-kit/server-options";

export const PUBLIC_RECEIVER_HOST = "hooks.ci-client.dev";

export async function startLiveServer({ questionSets = 5, publicHosts = [], loopbackHosts = [], extraCa, dispatcher = false } = {}) {
  const server = await startServer({
    ...testServerOptions(),
    inMemory: true,
    logLevel: "warn",
    dispatcher,
    resolver: staticResolver(resolverTable({ publicHosts: [PUBLIC_RECEIVER_HOST, ...publicHosts], loopbackHosts })),
    ...(loopbackHosts.length && { allowCidrs: ["127.0.0.1/32"] }),
    ...(extraCa && { extraCa }),
  });
  try {
    const org = await createOrg(server.db, { name: "ci-client" });
    const { token } = await createToken(server.db, { orgId: org.id, scopes: PUBLIC_SCOPES });
    const { token: ingestToken } = await createToken(server.db, { orgId: org.id, scopes: ["internal:ingest"] });
    const ingest = async (path, body) => {
      const res = await fetch(`${server.url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${ingestToken}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      if (res.status !== 201 && res.status !== 202) throw new Error(`POST ${path} answered ${res.status}: ${await res.text()}`);
      return res.json();
    };
    const created = [];
    for (let i = 0; i < questionSets; i++) {
      const set = await ingest("/v2/internal/question_sets", { set_name: `CI set ${i}`, set_code: `CI-${i}`, is_production: i % 2 === 0, questions: [{ query: `Q${i}` }] });
      created.push(set);
    }
    // The list is eventually consistent: wait until it shows what was ingested.
    const deadline = Date.now() + 15_000;
    for (;;) {
      const res = await fetch(`${server.url}/v2/question_sets?include_total=true&limit=1`, { headers: { authorization: `Bearer ${token}` } });
      if ((await res.json()).total_count === created.length) break;
      if (Date.now() > deadline) throw new Error("the question-set list never showed the ingested sets");
      await new Promise((r) => setTimeout(r, 50));
    }
    return { url: server.url, token, orgId: org.id, questionSets: [...created].reverse(), ingest, close: () => server.close() };
  } catch (err) {
    await server.close();
    throw err;
  }
}
