import { promises as dns } from "node:dns";
import { readFileSync, statSync } from "node:fs";
import { isIP } from "node:net";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** How long one name may take to resolve when nothing else is configured (ARS_DNS_TIMEOUT_MS). */
export const DEFAULT_DNS_TIMEOUT_MS = 3_000;

/**
 * A name that could not be resolved. `code` is `ENOTFOUND` when DNS says the name has no
 * address, `ETIMEOUT` when no answer came in time, otherwise the DNS failure (`ESERVFAIL`,
 * `EREFUSED`, …). The message names the host and the reason, nothing else: it is stored as an
 * attempt's error and shown to API users.
 */
export class DnsLookupError extends Error {
  override name = "DnsLookupError";
  readonly code: string;
  readonly hostname: string;
  /** the deadline that ran out, for `ETIMEOUT` */
  readonly timeoutMs: number | undefined;

  constructor(hostname: string, code: string, timeoutMs?: number) {
    super(code === "ETIMEOUT" ? `could not resolve ${hostname}: no answer from DNS within ${timeoutMs} ms` : `could not resolve ${hostname} (${code})`);
    this.code = code;
    this.hostname = hostname;
    this.timeoutMs = timeoutMs;
  }
}

function asFamily(address: string): 4 | 6 {
  return isIP(address) === 6 ? 6 : 4;
}

function normalise(name: string): string {
  return name.toLowerCase().replace(/\.$/, "");
}

/** The hosts file's names → addresses, re-read when the file changes (checked at most once a second). */
function hostsTable(path: string): () => ReadonlyMap<string, readonly string[]> {
  let table: ReadonlyMap<string, readonly string[]> = new Map();
  let seen: number | undefined;
  let checkedAt = -Infinity;
  return () => {
    if (performance.now() - checkedAt < 1_000) return table;
    checkedAt = performance.now();
    let mtime: number;
    try {
      mtime = statSync(path).mtimeMs;
    } catch {
      table = new Map();
      seen = undefined;
      return table;
    }
    if (mtime === seen) return table;
    seen = mtime;
    const next = new Map<string, string[]>();
    try {
      for (const line of readFileSync(path, "utf8").split(/\r?\n/)) {
        const [address, ...names] = line.replace(/#.*/, "").trim().split(/\s+/);
        // a scoped address (fe80::1%lo0) is no destination for a webhook
        if (!address || isIP(address) === 0 || address.includes("%")) continue;
        for (const name of names.map(normalise)) {
          const list = next.get(name) ?? [];
          if (!list.includes(address)) list.push(address);
          next.set(name, list);
        }
      }
    } catch {
      // unreadable: no hosts file
    }
    table = next;
    return table;
  };
}

const LOOPBACK = ["127.0.0.1", "::1"];

function defaultHostsFile(): string {
  return process.platform === "win32" ? `${process.env.SystemRoot ?? "C:\\Windows"}\\System32\\drivers\\etc\\hosts` : "/etc/hosts";
}

export interface DnsResolverOptions {
  /** The longest one name may take, A and AAAA together; then the lookup fails with `ETIMEOUT`. */
  timeoutMs: number;
  /** DNS servers (`ip` or `ip:port`); by default the system's (`/etc/resolv.conf`). */
  servers?: string[];
  /** Consulted before DNS, as the system resolver does; default the OS's hosts file, null for none. */
  hostsFile?: string | null;
}

/**
 * Asks DNS itself, asynchronously, with a deadline: `dns.lookup` (getaddrinfo) runs in libuv's
 * thread pool of four, where a few names whose servers never answer block every other lookup
 * and file operation for as long as the system resolver waits. Here A and AAAA are asked in
 * parallel on the event loop, and a name gets `timeoutMs` in all. What getaddrinfo did besides
 * DNS is kept: IP literals answer themselves, the hosts file comes first, and `localhost` (and
 * names under it) is loopback (RFC 6761).
 */
export function createDnsResolver({ timeoutMs, servers, hostsFile = defaultHostsFile() }: DnsResolverOptions): Resolver {
  // c-ares' own timeout is per try and grows between tries; two tries (a lost UDP packet gets a
  // second chance) and the deadline below bound the whole lookup.
  const resolver = new dns.Resolver({ timeout: Math.max(50, Math.floor(timeoutMs / 3)), tries: 2 });
  if (servers) resolver.setServers(servers);
  const hosts = hostsFile === null ? () => new Map<string, readonly string[]>() : hostsTable(hostsFile);
  const answer = (addresses: readonly string[]) => addresses.map((address) => ({ address, family: asFamily(address) }));

  return async (hostname) => {
    const name = normalise(hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname);
    if (isIP(name) !== 0) return answer([name]);
    const fixed = hosts().get(name);
    if (fixed?.length) return answer(fixed);
    if (name === "localhost" || name.endsWith(".localhost")) return answer(LOOPBACK);

    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DnsLookupError(name, "ETIMEOUT", timeoutMs)), timeoutMs);
    });
    try {
      const [v4, v6] = await Promise.allSettled([
        Promise.race([resolver.resolve4(name), deadline]),
        Promise.race([resolver.resolve6(name), deadline]),
      ]);
      // Whatever one family answered is the answer: the other's failure hides nothing the
      // sender could connect to, since it only ever connects to addresses vetted here.
      const found = [...(v4.status === "fulfilled" ? v4.value : []), ...(v6.status === "fulfilled" ? v6.value : [])];
      if (found.length) return answer([...new Set(found)]);
      const codes = [v4, v6].map((r) => (r.status === "rejected" ? codeOf(r.reason) : "ENODATA"));
      if (codes.includes("ETIMEOUT")) throw new DnsLookupError(name, "ETIMEOUT", timeoutMs);
      const failure = codes.find((c) => !NO_SUCH_NAME.has(c));
      throw new DnsLookupError(name, failure ?? "ENOTFOUND");
    } finally {
      clearTimeout(timer);
    }
  };
}

/** Answers meaning "this name has no address" rather than "DNS failed". */
const NO_SUCH_NAME = new Set(["ENOTFOUND", "ENODATA", "EBADNAME", "ENONAME"]);

function codeOf(err: unknown): string {
  if (err instanceof DnsLookupError) return err.code;
  const code = typeof err === "object" && err !== null && "code" in err ? err.code : undefined;
  return typeof code === "string" ? code : "EUNKNOWN";
}

let systemDefault: Resolver | undefined;
/** The system's DNS servers and hosts file, with the default deadline (one instance, made on first use). */
export const systemResolver: Resolver = (hostname) => (systemDefault ??= createDnsResolver({ timeoutMs: DEFAULT_DNS_TIMEOUT_MS }))(hostname);

function notFound(hostname: string): Error {
  // Shaped like getaddrinfo's failure so callers classify both resolvers the same way.
  return Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
    code: "ENOTFOUND",
    errno: -3008,
    syscall: "getaddrinfo",
    hostname,
  });
}

/** A fixed name → addresses table, for tests and local development. Names match case-insensitively. */
export function staticResolver(map: Record<string, string[]>): Resolver {
  const table = new Map<string, string[]>();
  for (const [name, addresses] of Object.entries(map)) {
    for (const address of addresses) {
      if (isIP(address) === 0) throw new Error(`staticResolver: ${JSON.stringify(address)} is not an IP address`);
    }
    table.set(normalise(name), [...addresses]);
  }
  return async (hostname) => {
    const addresses = table.get(normalise(hostname));
    if (!addresses || addresses.length === 0) throw notFound(hostname);
    return addresses.map((address) => ({ address, family: asFamily(address) }));
  };
}
