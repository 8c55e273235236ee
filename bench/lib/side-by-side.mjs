// Two servers' pages timed side by side: each page's requests go to the two in turn, one by one,
// and who goes first alternates too, so whatever a shared 2-core machine does meanwhile (another
// process, autovacuum, a CPU's clock) falls on both alike. A 5 % difference between two builds, or
// between a young database and a month-old one, is then measurable where two processes measured
// one after the other drift by more than that (bench/NOTES.md, "The first page over the days
// kept"). Used by lists-ab.mjs (two builds, one database) and retention.mjs (one build, two
// databases).

/** The p50 of `xs` (upper median). */
export const p50 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** One GET, body read to the end; its wall time in ms. A status other than 200 ends the bench. */
export async function timedGet(url, headers) {
  const t = performance.now();
  const res = await fetch(url, { headers });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
  return performance.now() - t;
}

/**
 * `sides` maps a name to `{ url, headers }` (a server's base URL and the headers its requests
 * carry); `pages` maps a page's name to `{ [side]: path }` (each side's own path: its cursor and
 * endpoint ids are its own). For each page, `warmUp + requests` rounds of one request per side;
 * returns `{ [page]: { [side]: p50 ms } }` over the rounds after the warm-up.
 */
export async function sideBySide(sides, pages, { requests, warmUp = 50 }) {
  const names = Object.keys(sides);
  if (names.length !== 2) throw new Error("sideBySide compares two servers");
  const out = {};
  for (const [page, paths] of Object.entries(pages)) {
    const ms = Object.fromEntries(names.map((n) => [n, []]));
    for (let i = 0; i < requests + warmUp; i++) {
      for (const side of i % 2 ? names : [...names].reverse()) {
        const t = await timedGet(sides[side].url + paths[side], sides[side].headers);
        if (i >= warmUp) ms[side].push(t);
      }
    }
    out[page] = Object.fromEntries(names.map((n) => [n, p50(ms[n])]));
  }
  return out;
}
