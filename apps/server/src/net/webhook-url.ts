import { isIP } from "node:net";
import type { AddressPolicy } from "./ip-policy.js";
import { DnsLookupError, type Resolver } from "./resolver.js";

export type WebhookUrlCheck =
  | { ok: true; url: URL; addresses: string[] }
  | { ok: false; reason: string };

export interface WebhookUrlCheckOptions {
  resolver: Resolver;
  addressPolicy: AddressPolicy;
}

// Special-use and de-facto private suffixes: names under them are never a public receiver,
// whatever a local resolver might answer for them.
const RESERVED_SUFFIXES = [
  "localhost",
  "localdomain",
  "local",
  "internal",
  "intranet",
  "lan",
  "corp",
  "home",
  "private",
  "test",
  "invalid",
  "example",
  "onion",
  "alt",
  "arpa", // includes home.arpa and reverse-DNS names
];

// Every label a number in a form inet_aton accepts (decimal, 0x-hex, 0-octal): the WHATWG parser
// turns such hosts into an IPv4 address, which `URL` then only shows in dotted form.
const NUMERIC_LABEL = /^(?:0x[0-9a-f]*|[0-9]+)$/i;

function fail(reason: string): WebhookUrlCheck {
  return { ok: false, reason };
}

/** The authority exactly as written, before WHATWG normalisation. */
function rawAuthority(raw: string): string {
  const rest = raw.slice("https://".length);
  const end = rest.search(/[/?#]/);
  return end === -1 ? rest : rest.slice(0, end);
}

function rawHost(authority: string): string {
  const hostPort = authority.slice(authority.lastIndexOf("@") + 1);
  if (hostPort.startsWith("[")) return hostPort.slice(0, hostPort.indexOf("]") + 1);
  const colon = hostPort.indexOf(":");
  return colon === -1 ? hostPort : hostPort.slice(0, colon);
}

function looksLikeIpLiteral(host: string): boolean {
  if (host.startsWith("[") || isIP(host) !== 0) return true;
  let decoded: string;
  try {
    decoded = decodeURIComponent(host);
  } catch {
    decoded = host;
  }
  const labels = decoded.replace(/\.$/, "").split(".");
  return labels.every((label) => NUMERIC_LABEL.test(label));
}

function isReservedName(name: string): boolean {
  return RESERVED_SUFFIXES.some((suffix) => name === suffix || name.endsWith(`.${suffix}`));
}

/**
 * Syntax and name rules that need no network: returns a reason, or null when the URL may be
 * resolved. Reasons never quote the URL itself, which may carry credentials.
 */
export function checkWebhookUrlSyntax(raw: string): { reason: string } | { url: URL; hostname: string } {
  // Whitespace, controls and backslashes are silently rewritten by WHATWG parsing, so the
  // authority we inspect below could differ from the one a client connects to.
  if (/[\s\\\u0000-\u001f\u007f]/.test(raw)) return { reason: "URL contains whitespace, control characters or backslashes" };
  if (!/^https:\/\//i.test(raw)) return { reason: "URL must be an absolute https:// URL" };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { reason: "URL is not a valid absolute URL" };
  }
  if (url.protocol !== "https:") return { reason: "URL must be an absolute https:// URL" };
  const authority = rawAuthority(raw);
  if (authority.includes("@") || url.username !== "" || url.password !== "") {
    return { reason: "URL must not contain user information (credentials)" };
  }
  if (raw.includes("#")) return { reason: "URL must not contain a fragment" };
  if (looksLikeIpLiteral(rawHost(authority)) || looksLikeIpLiteral(url.hostname)) {
    return { reason: "URL host must be a DNS name, not an IP address" };
  }
  const hostname = url.hostname.replace(/\.$/, "").toLowerCase();
  if (isReservedName(hostname)) {
    return { reason: `URL host "${hostname}" is a local or reserved name` };
  }
  if (hostname === "" || !hostname.includes(".")) {
    return { reason: `URL host "${hostname}" must be a fully qualified domain name` };
  }
  return { url, hostname };
}

/** Why a name gave no addresses: it has none, or DNS could not tell (then trying again may help). */
function unresolved(hostname: string, err: unknown): string {
  if (!(err instanceof DnsLookupError) || err.code === "ENOTFOUND") return `URL host "${hostname}" does not resolve`;
  if (err.code === "ETIMEOUT") return `URL host "${hostname}" could not be checked: DNS did not answer within ${err.timeoutMs} ms; try again later`;
  return `URL host "${hostname}" could not be checked: DNS failed (${err.code}); try again later`;
}

/** docs/api-decisions.md#webhook-endpoints: every rule behind INVALID_WEBHOOK_URL (the length limit is the contract's). */
export async function checkWebhookUrl(raw: string, { resolver, addressPolicy }: WebhookUrlCheckOptions): Promise<WebhookUrlCheck> {
  const syntax = checkWebhookUrlSyntax(raw);
  if ("reason" in syntax) return fail(syntax.reason);
  const { url, hostname } = syntax;

  let answers: Awaited<ReturnType<Resolver>>;
  try {
    answers = await resolver(hostname);
  } catch (err) {
    return fail(unresolved(hostname, err));
  }
  if (answers.length === 0) return fail(`URL host "${hostname}" does not resolve`);

  // One bad answer is enough: a client may pick any of them, and an attacker controls which.
  const blocked = answers.find(({ address }) => !addressPolicy.isAllowed(address));
  if (blocked) {
    return fail(`URL host "${hostname}" resolves to ${blocked.address}, which is not a public unicast address`);
  }
  return { ok: true, url, addresses: answers.map(({ address }) => address) };
}
