// A list page goes to node:http in pieces below V8's large-object size (128 KB), never as one
// string of the whole page, and the pieces together are exactly the list envelope.
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { describe, expect, it } from "vitest";
import { listEnvelope, sendList } from "../../src/http/pagination.js";
import type { Page } from "../../src/lib/page.js";

interface Row {
  n: number;
  text: string;
}
const present = (r: Row) => ({ id: `row_${r.n}`, text: r.text, n: r.n });

/** What one response wrote: every piece handed to `write`/`end`, and the body as received. */
async function sent(page: Page<Row>): Promise<{ pieces: string[]; body: string; length: string | null }> {
  const pieces: string[] = [];
  const app = express();
  app.get("/", (_req, res) => {
    const write = res.write.bind(res) as (chunk: string) => boolean;
    const end = res.end.bind(res) as (chunk?: string) => typeof res;
    res.write = ((chunk: string) => (pieces.push(chunk), write(chunk))) as typeof res.write;
    res.end = ((chunk?: string) => (chunk !== undefined && pieces.push(chunk), end(chunk))) as typeof res.end;
    sendList(res, page, present);
  });
  const server = createServer(app).listen(0, "127.0.0.1");
  await once(server, "listening");
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    return { pieces, body: await res.text(), length: res.headers.get("content-length") };
  } finally {
    server.close();
  }
}

const rows = (count: number, chars: number): Row[] => Array.from({ length: count }, (_, n) => ({ n, text: "ab✓é".repeat(chars / 4) }));
describe("sendList", () => {
  it("sends a page of 100 rows of 4,000 characters in pieces of at most 32 K characters and one row", async () => {
    const page: Page<Row> = { rows: rows(100, 4_000), hasMore: true, total: 250 };
    const { pieces, body, length } = await sent(page);
    expect(body).toBe(JSON.stringify(listEnvelope(page.rows.map(present), true, 250)));
    expect(length).toBe(String(Buffer.byteLength(body)));
    expect(pieces.join("")).toBe(body);
    expect(pieces.length).toBeGreaterThanOrEqual(400_000 / 36_000);
    for (const piece of pieces) expect(piece.length).toBeLessThan(32 * 1024 + 4_100);
  });

  it("sends a small page, an empty page and a page without total as the same envelope", async () => {
    for (const page of [
      { rows: rows(3, 40), hasMore: false, total: undefined },
      { rows: [], hasMore: false, total: 0 },
      { rows: rows(1, 40_000), hasMore: false, total: undefined },
    ] satisfies Page<Row>[]) {
      const { pieces, body, length } = await sent(page);
      expect(body).toBe(JSON.stringify(listEnvelope(page.rows.map(present), page.hasMore, page.total)));
      expect(pieces.join("")).toBe(body);
      expect(length).toBe(String(Buffer.byteLength(body)));
    }
  });
});
