import { request } from "node:http";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
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

  it("when HEAD /docs is asked, then it answers as GET does, without a body", async () => {
    const get = await server.raw("/docs");
    const head = await server.raw("/docs", { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe(get.headers.get("content-type"));
    expect(head.headers.get("etag")).toBe(get.headers.get("etag"));
    expect(await head.text()).toBe("");
    expect((await server.raw("/openapi.json", { method: "HEAD" })).status).toBe(200);
  });

  it("when a client accepts brotli or gzip, then the page comes compressed, and decompresses to the page", async () => {
    const identity = await bytes("/docs", { "accept-encoding": "identity" });
    expect(identity.headers["content-encoding"]).toBeUndefined();
    expect(identity.body.length).toBeGreaterThan(2_000_000);
    const br = await bytes("/docs", { "accept-encoding": "gzip, deflate, br" });
    expect(br.headers["content-encoding"]).toBe("br");
    expect(brotliDecompressSync(br.body).equals(identity.body)).toBe(true);
    const gzip = await bytes("/docs", { "accept-encoding": "gzip" });
    expect(gzip.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(gzip.body).equals(identity.body)).toBe(true);
    expect(gzip.body.length).toBeLessThan(identity.body.length / 3);
    expect(br.headers.vary).toMatch(/Accept-Encoding/);
    const json = await bytes("/openapi.json", { "accept-encoding": "gzip" });
    expect(json.headers["content-encoding"]).toBe("gzip");
  });

  it("when the page is asked again with its ETag, then 304 and no body; it says how long to cache it", async () => {
    const first = await server.raw("/docs");
    const etag = first.headers.get("etag");
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(first.headers.get("cache-control")).toMatch(/max-age=\d+/);
    const again = await server.raw("/docs", { headers: { "if-none-match": etag! } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    expect((await server.raw("/docs", { headers: { "if-none-match": '"other"' } })).status).toBe(200);
  });

  it("when the browser asks for /favicon.ico, then it gets an icon", async () => {
    const res = await server.raw("/favicon.ico");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^image\//);
  });

  it("when one of the page's own links is opened in a new tab, then it redirects to the page at that place", async () => {
    const html = await (await server.raw("/docs")).text();
    const links = [...new Set([...html.matchAll(/href="(\/[a-z0-9-]+(?:\/[a-z0-9-]+)*)"/g)].map((m) => m[1]!))];
    expect(links).toEqual(expect.arrayContaining(["/section/webhooks", "/question-sets", "/webhooks"]));
    for (const link of [...links, "/webhook-endpoints/createwebhookendpoint"]) {
      const res = await server.raw(link, { redirect: "manual" });
      expect({ link, status: res.status, location: res.headers.get("location") }).toEqual({ link, status: 302, location: `/docs#${link}` });
    }
    await rawProblem(await server.raw("/no-such-page"), { status: 404, code: "NOT_FOUND" });
  });

  it("when the page is rendered, then webhooks have their own section and every operation shows code samples", async () => {
    const html = await (await server.raw("/docs")).text();
    expect(html).toContain('href="/webhooks"');
    expect(html).toContain("Delivery statuses");
    expect(html).toContain("API docs by Redoc");
    expect(html).not.toContain("{$request.body#/url}");
    const spec = (await (await server.raw("/openapi.json")).json()) as { paths: Record<string, Record<string, { responses?: unknown; "x-codeSamples"?: unknown[] }>> };
    const ops = Object.values(spec.paths).flatMap((item) => Object.values(item).filter((op) => op.responses));
    expect(ops.length).toBeGreaterThan(15);
    for (const op of ops) expect(op["x-codeSamples"]).toHaveLength(4);
  });
});

/** A GET whose body is left as sent (fetch would decompress it). */
function bytes(path: string, headers: Record<string, string>): Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(server.url + path, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.end();
  });
}
