// Without response validation (production's default) a list page leaves the server in pieces of
// at most ~32 K characters, so no page is one large string on V8's heap (http/pagination.ts). The
// text must still be exactly the list envelope: compact JSON, the right length in bytes when rows
// hold characters of two and three UTF-8 bytes, and the same rows as each row's own answer.
import { randomUUID } from "node:crypto";
import type { QuestionSet } from "@audit-review/api-types/internal";
import { describe, expect, it } from "vitest";
import { uniq, useApiServer } from "../harness/factories.js";

const server = await useApiServer({ validateResponses: false });

async function raw(token: string, path: string) {
  const res = await fetch(server.url + path, { headers: { authorization: `Bearer ${token}` } });
  const bytes = Buffer.from(await res.arrayBuffer());
  return { res, bytes, text: bytes.toString("utf8") };
}

describe("a list page sent in pieces", () => {
  it("is the list envelope, byte for byte, across several pieces", async () => {
    const { api, token } = await server.newOrg();
    // 30 sets of ≈ 4,000 characters each: ≈ 120 K characters, four pieces
    const created: QuestionSet[] = [];
    for (let i = 0; i < 30; i++) {
      const u = uniq();
      const { data, response } = await api.PUT("/v2/internal/question_sets/{question_set_id}", {
        params: { path: { question_set_id: randomUUID() } },
        body: {
          set_name: `Set ${u} — café ✓ ${i}`,
          set_code: `SET-${u}`,
          type: "compliance",
          is_production: true,
          thresholds: [],
          questions: [
            { query: `Is the note signed? ${"é✓ \"quoted\" \\ ".repeat(120)}`.slice(0, 2000) },
            { query: `${"Documented? ".repeat(160)}`.slice(0, 2000) },
          ],
        },
      });
      expect(response.status).toBe(201);
      created.push(data!);
    }

    const { res, bytes, text } = await raw(token, "/v2/question_sets?limit=100&include_total=true");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(text.length).toBeGreaterThan(3 * 32 * 1024);
    expect(Number(res.headers.get("content-length"))).toBe(bytes.length);
    expect(bytes.length).toBeGreaterThan(text.length); // multi-byte characters were counted as bytes
    const page = JSON.parse(text) as { object: string; data: QuestionSet[]; has_more: boolean; total_count: number };
    expect(JSON.stringify(page)).toBe(text);
    expect(Object.keys(page)).toEqual(["object", "data", "has_more", "total_count"]);
    expect(page).toMatchObject({ object: "list", has_more: false, total_count: 30 });
    const byId = new Map(created.map((s) => [s.id, s]));
    expect(page.data.map((s) => s.id).sort()).toEqual([...byId.keys()].sort());
    for (const s of page.data) expect(s).toEqual(byId.get(s.id));

    // a page that stops early says so
    const first = await raw(token, "/v2/question_sets?limit=7");
    const firstPage = JSON.parse(first.text) as { data: QuestionSet[]; has_more: boolean };
    expect(JSON.stringify(firstPage)).toBe(first.text);
    expect(Object.keys(firstPage)).toEqual(["object", "data", "has_more"]);
    expect(firstPage.has_more).toBe(true);
    expect(firstPage.data.map((s) => s.id)).toEqual(page.data.slice(0, 7).map((s) => s.id));
    expect(first.res.headers.get("content-length")).toBe(String(first.bytes.length));
  });

  it("an empty page is the envelope with no rows", async () => {
    const { token } = await server.newOrg();
    const { res, text } = await raw(token, "/v2/question_sets?include_total=true");
    expect(res.status).toBe(200);
    expect(text).toBe('{"object":"list","data":[],"has_more":false,"total_count":0}');
    expect(res.headers.get("content-length")).toBe(String(Buffer.byteLength(text)));
  });
});
