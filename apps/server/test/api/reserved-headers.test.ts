// The reserved receiver-header names have one owner (lib/receiver-headers.ts): create and update
// refuse exactly the names the sender would drop or overwrite, and the contract lists the same.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { isReservedHeaderName, RESERVED_HEADER_NAMES, TRANSPORT_HEADERS } from "../../src/lib/receiver-headers.js";
import { SPEC_PATH } from "../../src/lib/paths.js";
import { createEndpoint, PUBLIC_HOST, rawProblem, useApiServer } from "../harness/factories.js";

const server = await useApiServer();
const json = { "content-type": "application/json" };
const spelled = (name: string) => (name === "webhook-*" ? "Webhook-Custom" : name.replace(/(^|-)[a-z]/g, (c) => c.toUpperCase()));

describe("reserved receiver-header names", () => {
  it("when the contract describes custom headers, then it names exactly the reserved list", () => {
    const spec = parse(readFileSync(SPEC_PATH, "utf8")) as { components: { schemas: { AuthenticationHeadersInput: { description: string } } } };
    const listed = /not reserved \(([^:)]+)/.exec(spec.components.schemas.AuthenticationHeadersInput.description)![1]!.split(",").map((n) => n.trim().replace(/`/g, "").toLowerCase());
    expect(listed.sort()).toEqual([...RESERVED_HEADER_NAMES].sort());
  });

  it("when every header the sender drops is checked, then each is reserved (an endpoint cannot hold a header that is not sent)", () => {
    for (const name of TRANSPORT_HEADERS) expect(isReservedHeaderName(name.toUpperCase()), name).toBe(true);
  });

  it.each(RESERVED_HEADER_NAMES.map(spelled))("when %s is a custom header on create or update, then 400 names authentication.headers and nothing changes", async (name) => {
    const { token, api } = await server.newOrg();
    const authentication = { type: "headers", headers: { [name]: "secret-value-1" } };
    const created = await rawProblem(await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body: JSON.stringify({ url: `https://${PUBLIC_HOST}/x`, authentication }) }), {
      status: 400,
      code: "VALIDATION_ERROR",
      name: "authentication.headers",
      location: "body",
    });
    expect(created.errors![0]!.message).toMatch(/reserved/);
    const endpoint = await createEndpoint(api);
    await rawProblem(await server.raw(`/v2/webhook_endpoints/${endpoint.id}`, { token, method: "PATCH", headers: json, body: JSON.stringify({ authentication }) }), {
      status: 400,
      code: "VALIDATION_ERROR",
      name: "authentication.headers",
      location: "body",
    });
    expect((await api.GET("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: endpoint.id } } })).data!.authentication).toEqual({ type: "none" });
  });

  it.each(["Authorization", "X-Api-Key", "X-Signature", "Webhook"])("when %s is a custom header, then it is accepted", async (name) => {
    const { api } = await server.newOrg();
    const created = await createEndpoint(api, { authentication: { type: "headers", headers: { [name]: "secret-value-2" } } });
    expect(created.authentication).toEqual({ type: "headers", header_names: [name] });
  });
});
