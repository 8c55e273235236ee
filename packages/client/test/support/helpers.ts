import { expect, vi } from "vitest";
import { createClient, type AuditReviewClient } from "../../src/index.js";

export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

export const ids = (items: ReadonlyArray<{ id: string }>) => items.map((item) => item.id);

/** A client of `baseUrl` that records the URL of every request it sends (to count pages). */
export function observedClient(baseUrl: string, token: string): { client: AuditReviewClient; urls: URL[] } {
  const urls: URL[] = [];
  const client = createClient({
    baseUrl,
    token,
    fetch: (req) => {
      urls.push(new URL(req.url));
      return fetch(req);
    },
  });
  return { client, urls };
}

/**
 * The question-set and coding-evaluation lists are eventually consistent (the contract allows a
 * lag of a few seconds): wait until the list counts what was ingested.
 */
export async function untilTotal(read: () => Promise<{ total_count?: number }>, expected: number): Promise<void> {
  await vi.waitFor(async () => expect((await read()).total_count).toBe(expected), { timeout: 15_000, interval: 50 });
}
