import { promises as dns } from "node:dns";
import { isIP } from "node:net";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

function asFamily(address: string): 4 | 6 {
  return isIP(address) === 6 ? 6 : 4;
}

/** The operating system's resolver, every A/AAAA answer in the order it gave them. */
export const systemResolver: Resolver = async (hostname) => {
  const answers = await dns.lookup(hostname, { all: true, verbatim: true });
  return answers.map(({ address }) => ({ address, family: asFamily(address) }));
};

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

function normalise(name: string): string {
  return name.toLowerCase().replace(/\.$/, "");
}
