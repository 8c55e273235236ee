import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { rawProblem, useApiServer } from "../harness/factories.js";

const server = await useApiServer();

/** Every URL the page would fetch by itself: element sources, stylesheet links, CSS url() and @import. */
function networkLoads(html: string): string[] {
  const loads = [
    ...html.matchAll(/<(?:script|img|iframe|source|video|audio|embed)\b[^>]*\bsrc\s*=\s*["']?(https?:)?\/\/[^"'\s>]*/gi),
    ...html.matchAll(/<link\b[^>]*\bhref\s*=\s*["']?(https?:)?\/\/[^"'\s>]*/gi),
    ...html.matchAll(/url\(\s*["']?(https?:)?\/\/[^)"']*/gi),
    ...html.matchAll(/@import\s+["'](https?:)?\/\/[^"']*/gi),
  ].map((m) => m[0]);
  // Redoc's own remote resources (its logo, icon sets, telemetry) live in its script, not in markup.
  const named = html.match(/https:\/\/(?:cdn\.redoc\.ly|cdn\.redocly\.com|otel\.cloud\.redocly\.com)\/[^`"'\s)]*/g) ?? [];
  return [...loads, ...named];
}

describe("docs and spec", () => {
  it("when /docs is requested without a token, then it answers the self-contained reference page", async () => {
    const res = await server.raw("/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).toContain("Audit Review Service API");
    expect(html).toContain("listQuestionSets");
    expect(networkLoads(html)).toEqual([]);
  });

  it("when the scan meets a page that loads from the network, then it reports each load", () => {
    const page = `<script src="https://cdn.example.com/a.js"></script><link rel="stylesheet" href="//fonts.example.com/c.css"><img src='http://x.example.com/l.png'><style>@import "https://f.example.com/x.css"; a{background:url(https://i.example.com/b.png)}</style>`;
    expect(networkLoads(page)).toHaveLength(5);
    expect(networkLoads(`<a href="https://audit-review.dev/terms">terms</a><img src="data:,">`)).toEqual([]);
  });

  it("when /openapi.json is requested without a token, then it is the public contract: no internal operation", async () => {
    const res = await server.raw("/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const spec = (await res.json()) as { openapi: string; paths: Record<string, Record<string, { "x-internal"?: boolean; operationId: string }>> };
    expect(spec.openapi).toBe("3.0.3");
    const operations = Object.values(spec.paths).flatMap((item) => Object.values(item));
    expect(operations.map((op) => op.operationId)).toEqual(expect.arrayContaining(["listQuestionSets", "createWebhookEndpoint", "getHealth", "getDocs"]));
    expect(operations.filter((op) => op["x-internal"])).toEqual([]);
    expect(Object.keys(spec.paths).filter((p) => p.includes("/internal/"))).toEqual([]);
  });

  it("when /openapi.yaml is requested without a token, then it is the same document as /openapi.json", async () => {
    const res = await server.raw("/openapi.yaml");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/yaml/);
    expect(parse(await res.text())).toEqual(await (await server.raw("/openapi.json")).json());
  });

  it("when / is requested, then it redirects to /docs", async () => {
    const res = await server.raw("/", { redirect: "manual" });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("/docs");
  });

  it("when a docs path gets an unknown query parameter, then 400 VALIDATION_ERROR names it, as the contract says", async () => {
    await rawProblem(await server.raw("/docs?verbose=1"), { status: 400, code: "VALIDATION_ERROR", name: "verbose", location: "query" });
    await rawProblem(await server.raw("/healthz?verbose=1"), { status: 400, code: "VALIDATION_ERROR", name: "verbose", location: "query" });
  });

  it("when a token is sent anyway, even an unknown one, then the docs still answer", async () => {
    expect((await server.raw("/openapi.json", { token: "nope" })).status).toBe(200);
  });
});
