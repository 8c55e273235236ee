import { describe, expect, it } from "vitest";
import { useApiServer } from "../harness/factories.js";

const server = await useApiServer();

/** The access line of one request, once the server has written it (after the response). */
async function accessLine(requestId: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 50; i++) {
    const line = server.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === "request" && l.request_id === requestId);
    if (line) return line;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no access line for ${requestId}`);
}

describe("access log", () => {
  it("when a list is read and when a request is refused, then each writes one line: id, method, path, operation, org, status, duration, never the query", async () => {
    const { token, orgId } = await server.newOrg();
    await server.raw("/v2/coding_evaluations?limit=5&status=failed", { token, headers: { "x-request-id": "access-ok-1" } });
    await server.raw("/v2/coding_evaluations?limit=0", { token, headers: { "x-request-id": "access-bad-1" } });
    await server.raw("/v2/coding_evaluations", { headers: { "x-request-id": "access-anon-1" } });

    const ok = await accessLine("access-ok-1");
    expect(ok).toMatchObject({ level: 30, method: "GET", path: "/v2/coding_evaluations", operation: "listCodingEvaluations", org_id: orgId, status: 200 });
    expect(typeof ok.duration_ms).toBe("number");
    expect(await accessLine("access-bad-1")).toMatchObject({ status: 400, org_id: orgId });
    expect(await accessLine("access-anon-1")).toMatchObject({ status: 401, operation: "listCodingEvaluations" });
    expect(server.logs.filter((l) => l.includes('"access-ok-1"') && l.includes('"msg":"request"'))).toHaveLength(1);
    expect(server.logs.some((l) => l.includes("status=failed") || l.includes("limit="))).toBe(false);
  });
});
