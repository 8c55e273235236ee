// Rules with one owner, checked against the contract that documents them: the payload defaults
// (create and a replacing update use the same ones) and the recovery window (its figure and its
// message).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { SPEC_PATH } from "../../src/lib/paths.js";
import { RECOVERY_WINDOW_MS } from "../../src/services/webhook-endpoints.service.js";
import { createEndpoint, problemOf, useApiServer } from "../harness/factories.js";

const server = await useApiServer();
type Schema = { default?: unknown; enum?: unknown[]; description?: string; properties?: Record<string, Schema> };
const schemas = (parse(readFileSync(SPEC_PATH, "utf8")) as { components: { schemas: Record<string, Schema> } }).components.schemas;

describe("payload defaults", () => {
  const documented = {
    format: schemas.PayloadFormat!.default,
    fields: schemas.PayloadField!.enum,
    result_format: schemas.ResultFormat!.default,
    responses_filter: schemas.ResponsesFilter!.default,
    include_informational_questions: schemas.WebhookEndpointPayloadInput!.properties!.include_informational_questions!.default,
  };

  it("when an endpoint is created without payload, with an empty one, or updated with an empty one, then its payload is the contract's defaults", async () => {
    const { api } = await server.newOrg();
    expect((await createEndpoint(api)).payload).toEqual(documented);
    expect((await createEndpoint(api, { payload: {} })).payload).toEqual(documented);
    const shaped = await createEndpoint(api, { payload: { fields: ["data.result"], result_format: "raw", responses_filter: "failed", include_informational_questions: true } });
    expect(shaped.payload).not.toEqual(documented);
    const { data } = await api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: shaped.id } }, body: { payload: {} } });
    expect(data!.payload).toEqual(documented);
  });
});

describe("the recovery window", () => {
  it("when since reaches back further than the window, then the 400 states the window the contract documents", async () => {
    const days = RECOVERY_WINDOW_MS / 86_400_000;
    expect(schemas.RecoverRequest!.properties!.since!.description).toContain(`at most ${days} days back`);
    const { api } = await server.newOrg();
    const endpoint = await createEndpoint(api);
    const since = new Date(Date.now() - RECOVERY_WINDOW_MS - 60_000).toISOString();
    const problem = problemOf(await api.POST("/v2/webhook_endpoints/{endpoint_id}/recover", { params: { path: { endpoint_id: endpoint.id } }, body: { since } }), {
      status: 400,
      code: "VALIDATION_ERROR",
      name: "since",
    });
    expect(problem.errors).toEqual([{ location: "body", name: "since", message: `must be at most ${days} days back` }]);
  });
});
