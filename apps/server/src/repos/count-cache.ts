/**
 * `include_total` on a large org is PostgreSQL's own cost (an index-only scan over every
 * matching row: about half a second per million). The lists are documented as eventually
 * consistent, so an exact count may be a few seconds old:
 *
 * - a count that took at least `slowMs` is kept; for `freshMs` it is served as it is;
 * - after that, until `maxAgeMs`, it is still served while one background count refreshes it;
 * - older than `maxAgeMs`, the request counts again (and waits).
 *
 * Concurrent identical counts (same key: org + list + filter set) share one promise, slow or not.
 * Ages run from when a count started, so a served count never describes the table more than
 * `maxAgeMs` ago. Fast counts are never kept: a small org always sees its exact count.
 */
export interface CountCacheOptions {
  slowMs?: number;
  freshMs?: number;
  maxAgeMs?: number;
  /** Entries kept at most (the oldest go first). */
  maxEntries?: number;
  now?: () => number;
}

export interface CountCache {
  get(key: string, count: () => Promise<number>): Promise<number>;
}

interface Entry {
  value: number;
  /** when the count that produced `value` started */
  at: number;
}

export const COUNT_CACHE_DEFAULTS = { slowMs: 50, freshMs: 5_000, maxAgeMs: 10_000, maxEntries: 1_000 } as const;

export function createCountCache(options: CountCacheOptions = {}): CountCache {
  const { slowMs, freshMs, maxAgeMs, maxEntries } = { ...COUNT_CACHE_DEFAULTS, ...options };
  // elapsed time on the monotonic clock: the cache is this process's alone
  const now = options.now ?? (() => performance.now());
  const entries = new Map<string, Entry>();
  const running = new Map<string, Promise<number>>();

  function keep(key: string, entry: Entry): void {
    entries.delete(key);
    entries.set(key, entry);
    if (entries.size > maxEntries) entries.delete(entries.keys().next().value!);
  }

  function start(key: string, count: () => Promise<number>): Promise<number> {
    const existing = running.get(key);
    if (existing) return existing;
    const startedAt = now();
    const promise = count()
      .then((value) => {
        if (now() - startedAt >= slowMs) keep(key, { value, at: startedAt });
        else entries.delete(key);
        return value;
      })
      .finally(() => running.delete(key));
    running.set(key, promise);
    return promise;
  }

  return {
    get(key, count) {
      const entry = entries.get(key);
      if (entry) {
        const age = now() - entry.at;
        if (age < freshMs) return Promise.resolve(entry.value);
        if (age < maxAgeMs) {
          // the stale value answers now; a failed refresh leaves it to age out
          if (!running.has(key)) start(key, count).catch(() => undefined);
          return Promise.resolve(entry.value);
        }
        entries.delete(key);
      }
      return start(key, count);
    },
  };
}
