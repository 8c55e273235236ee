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
  // The renderer's default web fonts would come from a font CDN: the page asks for system fonts.
  const fonts = html.match(/fonts\.(?:googleapis|gstatic)\.com/g) ?? [];
  return [...loads, ...fonts];
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
    expect(identity.body.length).toBeGreaterThan(500_000);
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

  it("when a problem's type is followed, then it leads to that code's entry in the page's error catalogue", async () => {
    const problem = await rawProblem(await server.raw("/v2/no-such-thing"), { status: 404, code: "NOT_FOUND" });
    expect(problem.type).toBe("/problems/not-found");
    const followed = await server.raw(problem.type, { redirect: "manual" });
    expect({ status: followed.status, location: followed.headers.get("location") }).toEqual({ status: 302, location: "/docs#overview--not_found" });
    const spec = (await (await server.raw("/openapi.json")).json()) as { info: { description: string }; components: { schemas: { ErrorCode: { enum: string[] } } } };
    const codes = spec.components.schemas.ErrorCode.enum;
    expect(codes.length).toBeGreaterThan(15);
    for (const code of codes) {
      const res = await server.raw(`/problems/${code.toLowerCase().replace(/_/g, "-")}`, { redirect: "manual" });
      expect({ code, location: res.headers.get("location") }).toEqual({ code, location: `/docs#overview--${code.toLowerCase()}` });
      expect(spec.info.description, code).toContain(`\n### ${code}\n`);
    }
    expect((await server.raw("/problems", { redirect: "manual" })).headers.get("location")).toBe("/docs#overview--errors");
    await rawProblem(await server.raw("/problems/no-such-code"), { status: 404, code: "NOT_FOUND" });
  });

  it("when the client packages are asked for, then /clients lists them and serves each one the docs name", async () => {
    const index = await server.raw("/clients");
    expect(index.status).toBe(200);
    const html = await index.text();
    for (const file of ["audit-review-api-types-0.1.0.tgz", "audit-review-client-0.1.0.tgz"]) {
      expect(html).toContain(`/clients/${file}`);
      const res = await server.raw(`/clients/${file}`);
      expect({ file, status: res.status, type: res.headers.get("content-type") }).toEqual({ file, status: 200, type: "application/gzip" });
      // a gzip stream
      expect([...new Uint8Array(await res.arrayBuffer()).slice(0, 2)]).toEqual([0x1f, 0x8b]);
    }
    await rawProblem(await server.raw("/clients/nothing.tgz"), { status: 404, code: "NOT_FOUND" });
  });

  it("when the page is rendered, then webhooks have their own section, the receivers are code samples and every operation shows code samples", async () => {
    const html = await (await server.raw("/docs")).text();
    const embedded = /<script id="ars-contract" type="application\/json">([\s\S]*?)<\/script>/.exec(html);
    const docs = JSON.parse(embedded![1]!) as { webhooks: Record<string, { post: { description: string; "x-codeSamples": Array<{ lang: string }> } }> };
    const hook = docs.webhooks["audit.completed"]!.post;
    expect(hook.description).toContain("Delivery statuses");
    expect(hook["x-codeSamples"].map((x) => x.lang)).toEqual(["TypeScript", "Python", "Go"]);
    expect(html).not.toContain("{$request.body#/url}");
    // the console keeps a pasted token in memory only
    expect(html).toContain('persist-auth="false"');
    expect(html).toContain('allow-try="true"');
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
