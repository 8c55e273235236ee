import { describe, expect, it } from "vitest";
import { createBody, createEndpoint, PUBLIC_HOST, problemOf, publishEvent, remember, uniq, useApiServer } from "../harness/factories.js";
import { oneAfterAnother } from "../harness/keyset-list.js";
import type { Api } from "../harness/server.js";

const server = await useApiServer();

const live = (orgId: string) => server.server.db.prisma.webhookEndpoint.count({ where: { org_id: orgId, deleted_at: null } });

const fill = (api: Api, n: number) => oneAfterAnother(n, () => createEndpoint(api));

describe("DELETE /v2/webhook_endpoints/{endpoint_id}", () => {
  it("when an endpoint is deleted, then 204, it leaves list and GET, and its deliveries stay listed and readable", async () => {
    const { api } = await server.newOrg();
    const ep = await createEndpoint(api);
    await publishEvent(api);
    const res = await api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } } });
    expect(res.response.status).toBe(204);
    expect((await api.GET("/v2/webhook_endpoints")).data!.data).toEqual([]);
    problemOf(await api.GET("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } } }), { status: 404, code: "NOT_FOUND" });
    problemOf(await api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } } }), { status: 404, code: "NOT_FOUND" });
    const [delivery] = (await api.GET("/v2/webhook_deliveries", { params: { query: { endpoint_id: ep.id } } })).data!.data;
    expect(delivery).toMatchObject({ endpoint_id: ep.id, status: "failed", last_error: { code: "endpoint_deleted" } });
    expect((await api.GET("/v2/webhook_deliveries/{delivery_id}", { params: { path: { delivery_id: delivery!.id } } })).data!.id).toBe(delivery!.id);
  });

  it("when an org at the limit deletes endpoints while creates race, then every delete frees one slot and the org never exceeds 20", async () => {
    const { api, orgId } = await server.newOrg();
    const endpoints = await fill(api, 20);
    problemOf(await api.POST("/v2/webhook_endpoints", { body: createBody({ url: `https://${PUBLIC_HOST}/over` }) }), { status: 409, code: "ENDPOINT_LIMIT_REACHED" });

    const deletes = endpoints.slice(0, 3).map((e) => api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: e.id } } }));
    const creates = Array.from({ length: 8 }, () => api.POST("/v2/webhook_endpoints", { body: createBody({ url: `https://${PUBLIC_HOST}/race/${uniq()}` }) }));
    const [deleted, created] = await Promise.all([Promise.all(deletes), Promise.all(creates)]);
    expect(deleted.map((d) => d.response.status)).toEqual([204, 204, 204]);
    for (const c of created) if (c.data) remember(c.data.secret);
    const ok = created.filter((c) => c.response.status === 201).length;
    for (const c of created.filter((x) => x.response.status !== 201)) problemOf(c, { status: 409, code: "ENDPOINT_LIMIT_REACHED" });
    expect(ok).toBeGreaterThanOrEqual(0);
    expect(ok).toBeLessThanOrEqual(3);
    expect(await live(orgId)).toBe(17 + ok);
    // whatever the interleaving, the freed slots are usable afterwards
    await fill(api, 3 - ok);
    expect(await live(orgId)).toBe(20);
    problemOf(await api.POST("/v2/webhook_endpoints", { body: createBody({ url: `https://${PUBLIC_HOST}/over` }) }), { status: 409, code: "ENDPOINT_LIMIT_REACHED" });
  });
});
