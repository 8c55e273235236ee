import type { CreateWebhookEndpointRequest } from "@audit-review/api-types/internal";
import { describe, expect, it } from "vitest";
import { createBody, createEndpoint, PUBLIC_HOST, problemOf, remember, uniq, useApiServer } from "../harness/factories.js";
import { oneAfterAnother } from "../harness/keyset-list.js";
import type { Api } from "../harness/server.js";

const server = await useApiServer();

const body = (): CreateWebhookEndpointRequest => createBody({ url: `https://${PUBLIC_HOST}/limit/${uniq()}` });
const liveCount = async (api: Api) => (await api.GET("/v2/webhook_endpoints", { params: { query: { include_total: "true" } } })).data!.total_count;
const rowsOf = (orgId: string) => server.server.db.prisma.webhookEndpoint.count({ where: { org_id: orgId, deleted_at: null } });

const fill = (api: Api, n: number) => oneAfterAnother(n, () => createEndpoint(api));

describe("the limit of 20 endpoints per org", () => {
  it("when 30 creates race for an org with no endpoint, then exactly 20 succeed and 10 answer 409 ENDPOINT_LIMIT_REACHED", async () => {
    const { api, orgId } = await server.newOrg();

    const results = await Promise.all(Array.from({ length: 30 }, () => api.POST("/v2/webhook_endpoints", { body: body() })));
    for (const r of results) remember(r.data?.secret);

    const created = results.filter((r) => r.response.status === 201);
    const refused = results.filter((r) => r.response.status === 409);
    expect(created).toHaveLength(20);
    expect(refused).toHaveLength(10);
    for (const r of refused) {
      const problem = problemOf(r, { status: 409, code: "ENDPOINT_LIMIT_REACHED" });
      expect(problem.detail).toContain("20");
    }
    expect(new Set(created.map((r) => r.data!.id)).size).toBe(20);
    expect(await liveCount(api)).toBe(20);
    expect(await rowsOf(orgId)).toBe(20);
  });

  it("when an org has 20 endpoints, then the 21st is refused and nothing is stored", async () => {
    const { api, orgId } = await server.newOrg();
    await fill(api, 20);

    problemOf(await api.POST("/v2/webhook_endpoints", { body: body() }), { status: 409, code: "ENDPOINT_LIMIT_REACHED" });
    expect(await rowsOf(orgId)).toBe(20);
  });

  it("when one of 20 endpoints is disabled, then it still counts; when one is deleted, then its slot is free again", async () => {
    const { api } = await server.newOrg();
    const endpoints = await fill(api, 20);
    await api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: endpoints[0]!.id } }, body: { status: "disabled" } });

    const whileDisabled = await api.POST("/v2/webhook_endpoints", { body: body() });
    await api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: endpoints[1]!.id } } });
    const afterDelete = await api.POST("/v2/webhook_endpoints", { body: body() });
    remember(afterDelete.data?.secret);
    const overAgain = await api.POST("/v2/webhook_endpoints", { body: body() });

    expect(whileDisabled.response.status).toBe(409);
    expect(afterDelete.response.status).toBe(201);
    problemOf(overAgain, { status: 409, code: "ENDPOINT_LIMIT_REACHED" });
    expect(await liveCount(api)).toBe(20);
  });

  it("when another org is at its limit, then this org's creates are unaffected", async () => {
    const full = await server.newOrg();
    const other = await server.newOrg();
    await fill(full.api, 20);

    const results = await Promise.all(Array.from({ length: 5 }, () => other.api.POST("/v2/webhook_endpoints", { body: body() })));
    for (const r of results) remember(r.data?.secret);

    expect(results.map((r) => r.response.status)).toEqual([201, 201, 201, 201, 201]);
  });

  it("when two orgs race at once, then each ends with exactly 20", async () => {
    const a = await server.newOrg();
    const b = await server.newOrg();

    const results = await Promise.all(
      Array.from({ length: 24 }, (_, i) => (i % 2 ? a : b).api.POST("/v2/webhook_endpoints", { body: body() })).concat(
        Array.from({ length: 24 }, (_, i) => (i % 2 ? b : a).api.POST("/v2/webhook_endpoints", { body: body() })),
      ),
    );
    for (const r of results) remember(r.data?.secret);

    expect(results.filter((r) => r.response.status === 201)).toHaveLength(40);
    expect(results.filter((r) => r.response.status === 409)).toHaveLength(8);
    expect([await rowsOf(a.orgId), await rowsOf(b.orgId)]).toEqual([20, 20]);
  });
});
