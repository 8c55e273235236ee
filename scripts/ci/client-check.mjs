// Runs a generated client's check program (python_client_check.py, go-client/main.go) against a
// live server, and checks from our side that the server holds the endpoint it reports having
// created; runClientCheckWithAddedFields runs it again with a field added to every answer. The
// server runs in this process, so the program runs with async spawn (spawnSync would block the
// event loop the server answers on).
import { spawn } from "node:child_process";
import { startFieldAddingProxy } from "./field-adding-proxy.mjs";
import { PUBLIC_RECEIVER_HOST } from "./live-server.mjs";

/** Fails (throws) on a non-zero exit or an endpoint the server does not hold; answers the program's JSON line. */
export async function runClientCheck(server, { label, cmd, args = [], env = {} }) {
  const receiverUrl = `https://${PUBLIC_RECEIVER_HOST}/${label}`;
  const child = spawn(cmd, args, {
    env: { ...process.env, ...env, ARS_BASE_URL: server.url, ARS_TOKEN: server.token, ARS_RECEIVER_URL: receiverUrl, ARS_EXPECTED_QUESTION_SET_IDS: JSON.stringify(server.questionSets.map((s) => s.id)) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let stdout = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
    process.stdout.write(chunk);
  });
  const [code] = await new Promise((r) => child.on("close", (...a) => r(a)));
  if (code !== 0) throw new Error(`${label}: the check program exited ${code}`);
  const result = JSON.parse(stdout.split("\n").find((line) => line.startsWith("{")) ?? "{}");
  const res = await fetch(`${server.url}/v2/webhook_endpoints`, { headers: { authorization: `Bearer ${server.token}` } });
  const endpoints = (await res.json()).data;
  const created = endpoints.filter((e) => e.id === result.created_endpoint_id);
  if (created.length !== 1 || created[0].url !== receiverUrl) {
    throw new Error(`${label}: the server does not hold the endpoint the client reported: ${JSON.stringify(endpoints)}`);
  }
  return result;
}

/**
 * The same check through a proxy that adds a field to every JSON object the server answers (the
 * contract's compatibility policy): the client must not break on a field it does not know.
 */
export async function runClientCheckWithAddedFields(server, options) {
  const proxy = await startFieldAddingProxy(server.url);
  try {
    const result = await runClientCheck({ ...server, url: proxy.url }, { ...options, label: `${options.label}-added-fields` });
    if (!proxy.changed()) throw new Error(`${options.label}: the proxy changed no answer`);
    return result;
  } finally {
    await proxy.close();
  }
}
