// The contract's "Rate limits" section: every answer to a token carries the IETF RateLimit and
// RateLimit-Policy fields (draft-ietf-httpapi-ratelimit-headers, structured-field form), counting
// down through the window, and the refusal past the limit carries Retry-After too. Requests
// without a token (health, docs) are not counted and carry neither.
import { describe, expect, it } from "vitest";
import { rawProblem, useApiServer } from "../harness/factories.js";
import { stayInOneWindow } from "../harness/rate-window.js";

const LIMIT = 4;
const server = await useApiServer({ rateLimitPerMinute: LIMIT });

/** `"4-in-1min"; r=3; t=42` → name and parameters. */
function fields(value: string | null): { name: string; params: Record<string, string> } {
  expect(value, "header present").not.toBeNull();
  const [name, ...params] = value!.split(";").map((p) => p.trim());
  return { name: name!, params: Object.fromEntries(params.map((p) => p.split("=") as [string, string])) };
}

describe("rate-limit headers", () => {
  it("when a token makes requests, then each answer states the policy and what remains of the window, and the refusal adds Retry-After", async () => {
    const { token } = await server.newOrg();
    await stayInOneWindow(server.server.db, 15);
    const answers = [];
    for (let i = 0; i < LIMIT + 1; i++) answers.push(await server.raw("/v2/question_sets?limit=1", { token }));

    const policy = fields(answers[0]!.headers.get("ratelimit-policy"));
    expect(policy.params.q).toBe(String(LIMIT));
    expect(policy.params.w).toBe("60");
    // the partition key names the token's counter without revealing the token
    expect(policy.params.pk).toMatch(/^:[A-Za-z0-9+/=]+:$/);
    expect(answers[0]!.headers.get("ratelimit-policy")).not.toContain(token);

    const remaining = answers.map((a) => fields(a.headers.get("ratelimit")));
    for (const r of remaining) {
      expect(r.name).toBe(policy.name);
      const reset = Number(r.params.t);
      expect(Number.isInteger(reset) && reset >= 0 && reset <= 60, `t=${r.params.t}`).toBe(true);
    }
    expect(remaining.map((r) => r.params.r)).toEqual(["3", "2", "1", "0", "0"]);
    expect(answers.slice(0, LIMIT).map((a) => a.status)).toEqual([200, 200, 200, 200]);

    const refused = answers[LIMIT]!;
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
    await rawProblem(refused, { status: 429, code: "RATE_LIMITED" });
  });

  it("when a request carries no token, then it is not counted and carries no rate-limit fields", async () => {
    const health = await server.raw("/healthz");
    expect(health.status).toBe(200);
    expect(health.headers.get("ratelimit")).toBeNull();
    expect(health.headers.get("ratelimit-policy")).toBeNull();
  });
});
