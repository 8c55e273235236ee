import type { LookupAddress, LookupOptions } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import { createSecureContext, rootCertificates } from "node:tls";
import { Agent, buildConnector, type Dispatcher } from "undici";
import { judgeAnswer } from "../domain/delivery/answer.js";
import { errorField, isRecord } from "../lib/narrow.js";
import { TRANSPORT_HEADERS } from "../lib/receiver-headers.js";
import type { AddressPolicy } from "../net/ip-policy.js";
import { DnsLookupError, type ResolvedAddress, type Resolver } from "../net/resolver.js";

export type SendErrorCode =
  | "connection_error"
  | "timeout"
  | "tls_error"
  | "dns_error"
  | "destination_blocked"
  | "unexpected_status";

export interface SendError {
  code: SendErrorCode;
  /** Safe to store and show: never contains header values, bodies or credentials. */
  message: string;
}

export interface SendOutcome {
  /** true for 2xx only */
  ok: boolean;
  status: number | null;
  headers: Record<string, string>;
  durationMs: number;
  error: SendError | null;
}

/** What a webhook attempt keeps of the answer besides its status: the start of its body. */
export interface WebhookSendOutcome extends SendOutcome {
  /** the first RESPONSE_PREVIEW_BYTES of the body as text; null when no answer arrived */
  responseBody: string | null;
}

/** How much of a receiver's answer an attempt row keeps as `response_body` (docs/delivery.md#states). */
export const RESPONSE_PREVIEW_BYTES = 1024;

/**
 * The first bytes of a body as storable text: a character cut in half at the limit is dropped,
 * and NUL (which PostgreSQL text cannot hold) is removed.
 */
export function responsePreview(body: Buffer): string {
  const cut = body.length > RESPONSE_PREVIEW_BYTES;
  // stream: true holds back a character cut in half at the limit instead of mangling it
  const text = new TextDecoder().decode(body.subarray(0, RESPONSE_PREVIEW_BYTES), { stream: cut });
  return text.replace(/\u0000/g, "");
}

export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface RawRequest {
  url: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  /** defaults to the sender's maxResponseBytes */
  maxResponseBytes?: number;
}

export interface RawOutcome extends SendOutcome {
  /** the first maxResponseBytes of the body, UTF-8 decoded */
  body: string;
  truncated: boolean;
  /** the parsed body when it is complete, valid JSON; otherwise undefined */
  json: unknown;
}

export interface Sender {
  /** One webhook attempt: POST, no redirects, body read capped; only its first 1 KiB is kept. */
  send(req: SendRequest): Promise<WebhookSendOutcome>;
  /** Same agent, same address pinning: for OAuth2 token fetches and the like. */
  request(req: RawRequest): Promise<RawOutcome>;
  close(): Promise<void>;
}

export interface SenderOptions {
  resolver: Resolver;
  addressPolicy: AddressPolicy;
  connectTimeoutMs?: number;
  totalTimeoutMs?: number;
  maxResponseBytes?: number;
  /** Extra CA to trust (tests, local development); Node's default roots stay trusted. */
  ca?: string | Buffer;
  userAgent: string;
}

/** What one exchange brought back: the answer (its body capped) or why there was none. */
type Exchanged = { durationMs: number } & ({ status: number; headers: Record<string, string>; bytes: Buffer; truncated: boolean } | { error: SendError });

const BLOCKED = "ERR_DESTINATION_BLOCKED";
const TOTAL_TIMEOUT = "ERR_TOTAL_TIMEOUT";

function codedError(code: string, message: string): Error & { code: string } {
  return Object.assign(new Error(message), { code });
}

function unbracket(hostname: string): string {
  return hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
}

/**
 * A `net` lookup that answers only with addresses the policy allows, so the socket connects to
 * exactly the addresses vetted here and Node never resolves the name a second time (no DNS
 * rebinding between check and connect). Any disallowed answer refuses the whole name.
 */
export function createPinnedLookup(resolver: Resolver, addressPolicy: AddressPolicy): LookupFunction {
  async function vetted(hostname: string, family: LookupOptions["family"]): Promise<ResolvedAddress[]> {
    const answers = await resolver(hostname);
    const blocked = answers.find(({ address }) => !addressPolicy.isAllowed(address));
    if (blocked) throw codedError(BLOCKED, `${hostname} resolves to ${blocked.address}, which is not an allowed destination`);
    const wanted = family === 4 || family === "IPv4" ? 4 : family === 6 || family === "IPv6" ? 6 : 0;
    const usable = wanted === 0 ? answers : answers.filter((a) => a.family === wanted);
    if (usable.length === 0) throw codedError("ENOTFOUND", `no usable address for ${hostname}`);
    return usable;
  }

  return (hostname, options, callback) => {
    vetted(hostname, options.family).then(
      // Node 20's happy-eyeballs path asks with { all: true } and wants the array form.
      (usable) =>
        process.nextTick(() => {
          if (options.all) callback(null, usable.map((a): LookupAddress => ({ ...a })));
          else callback(null, usable[0]!.address, usable[0]!.family);
        }),
      (err: NodeJS.ErrnoException) => process.nextTick(() => callback(err, options.all ? [] : "")),
    );
  };
}

/** The resolver's own failure, wherever undici or net put it (a cause, an AggregateError's list). */
function findDnsError(err: unknown, depth = 0): DnsLookupError | undefined {
  if (err instanceof DnsLookupError) return err;
  if (depth > 5 || !isRecord(err)) return undefined;
  const inner = [err.cause, ...(Array.isArray(err.errors) ? err.errors : [])];
  for (const e of inner) {
    const found = findDnsError(e, depth + 1);
    if (found) return found;
  }
  return undefined;
}

function collectCodes(err: unknown, into: string[] = [], depth = 0): string[] {
  if (depth > 5 || !isRecord(err)) return into;
  const e = err;
  if (typeof e.code === "string") into.push(e.code);
  collectCodes(e.cause, into, depth + 1);
  // Happy eyeballs reports every failed address through an AggregateError.
  if (Array.isArray(e.errors)) for (const inner of e.errors) collectCodes(inner, into, depth + 1);
  return into;
}

const TIMEOUT_CODES = new Set(["UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "ETIMEDOUT", TOTAL_TIMEOUT]);
const DNS_CODES = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_FAIL", "EAI_NODATA", "EAI_NONAME", "ENODATA", "ESERVFAIL"]);
const TLS_CODES = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "HOSTNAME_MISMATCH",
  "INVALID_CA",
  "INVALID_PURPOSE",
  "EPROTO",
]);
const isTlsCode = (code: string) =>
  TLS_CODES.has(code) || /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_)/.test(code);

export interface ClassifyContext {
  hostname: string;
  connectTimeoutMs: number;
  totalTimeoutMs: number;
}

/**
 * Maps whatever undici or Node threw onto the `last_error.code` vocabulary of the API
 * (docs/delivery.md#states), with a message that names the host and the reason only.
 */
export function classifyError(err: unknown, ctx: ClassifyContext): SendError {
  const codes = collectCodes(err);
  const first = (test: (c: string) => boolean) => codes.find(test);

  if (codes.includes(BLOCKED)) {
    const message = err instanceof Error && errorField(err, "code") === BLOCKED ? err.message : `${ctx.hostname} is not an allowed destination`;
    return { code: "destination_blocked", message };
  }
  // The resolver's failures (a timeout included) are DNS's, whatever code they carry: a DNS
  // server refusing is no refused connection to the receiver.
  const unresolved = findDnsError(err);
  if (unresolved) return { code: "dns_error", message: unresolved.message };
  const timeout = first((c) => TIMEOUT_CODES.has(c));
  if (timeout === "UND_ERR_CONNECT_TIMEOUT") return { code: "timeout", message: `could not connect to ${ctx.hostname} within ${ctx.connectTimeoutMs} ms` };
  if (timeout) return { code: "timeout", message: `${ctx.hostname} did not answer within ${ctx.totalTimeoutMs} ms` };
  const tls = first(isTlsCode);
  if (tls) return { code: "tls_error", message: `TLS with ${ctx.hostname} failed (${tls})` };
  const dns = first((c) => DNS_CODES.has(c));
  if (dns) return { code: "dns_error", message: `could not resolve ${ctx.hostname} (${dns})` };
  const other = codes[0];
  return { code: "connection_error", message: `connection to ${ctx.hostname} failed${other ? ` (${other})` : ""}` };
}

function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    // A receiver's cookies are its own session state; nothing of ours should ever store them.
    if (value === undefined || name === "set-cookie") continue;
    flat[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return flat;
}

function outgoingHeaders(headers: Record<string, string>, userAgent: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!TRANSPORT_HEADERS.has(name.toLowerCase())) out[name] = value;
  }
  out["user-agent"] = userAgent;
  return out;
}

function preflight(raw: string): { url: URL } | { error: SendError } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { error: { code: "destination_blocked", message: "destination is not a valid URL" } };
  }
  if (url.protocol !== "https:") return { error: { code: "destination_blocked", message: "only https destinations are allowed" } };
  if (url.username || url.password) return { error: { code: "destination_blocked", message: "destination URL must not carry credentials" } };
  // Node skips the lookup hook for IP literals, so the policy would never see them.
  if (isIP(unbracket(url.hostname)) !== 0) {
    return { error: { code: "destination_blocked", message: "IP-literal destinations are not allowed" } };
  }
  return { url };
}

export function createSender({
  resolver,
  addressPolicy,
  connectTimeoutMs = 5000,
  totalTimeoutMs = 15000,
  maxResponseBytes = 65536,
  ca,
  userAgent,
}: SenderOptions): Sender {
  const connector = buildConnector({
    lookup: createPinnedLookup(resolver, addressPolicy),
    timeout: connectTimeoutMs,
    rejectUnauthorized: true,
    // Passing `ca` to tls replaces the default roots; keep them and add ours. One context for
    // every connection: built per connection it costs ~40 ms CPU and ~1 MB (bench/RESULTS.md).
    ...(ca ? { secureContext: createSecureContext({ ca: [...rootCertificates, ca.toString()] }) } : {}),
  });
  const agent = new Agent({
    connect(options, callback) {
      // Second line of defence for callers that skip preflight().
      if (isIP(unbracket(options.hostname)) !== 0) {
        callback(codedError(BLOCKED, "IP-literal destinations are not allowed"), null);
        return;
      }
      connector(options, callback);
    },
    headersTimeout: totalTimeoutMs,
    bodyTimeout: totalTimeoutMs,
  });

  /**
   * One request through undici's dispatch handler rather than `request`: no response stream, no
   * abort signal, no async iterator per answer (bench/NOTES.md: about a quarter of the client's
   * CPU per request). The answer is read up to `cap` bytes; the rest is never read, and the
   * connection closes rather than carry it. What arrived by the total timeout, or before the body
   * broke off, is the answer: its status decides. `finish` shapes the outcome as the promise
   * settles, so an attempt costs one promise, not one per layer.
   */
  function exchange<T>(method: "GET" | "POST", raw: string, headers: Record<string, string>, body: string | undefined, cap: number, finish: (r: Exchanged) => T): Promise<T> {
    const started = performance.now();
    const durationMs = () => Math.round(performance.now() - started);
    const checked = preflight(raw);
    if ("error" in checked) return Promise.resolve(finish({ error: checked.error, durationMs: durationMs() }));
    const { url } = checked;
    const failed = (cause: unknown): Exchanged => ({ error: classifyError(cause, { hostname: url.hostname, connectTimeoutMs, totalTimeoutMs }), durationMs: durationMs() });

    return new Promise((resolve) => {
      let controller: Dispatcher.DispatchController | null = null;
      let status: number | null = null;
      let answerHeaders: Record<string, string> = {};
      const chunks: Buffer[] = [];
      let size = 0;
      let settled = false;
      const settle = (outcome: Exchanged) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(finish(outcome));
      };
      const answered = (truncated: boolean) => settle({ status: status!, headers: answerHeaders, bytes: Buffer.concat(chunks), truncated, durationMs: durationMs() });
      const timer = setTimeout(() => {
        const reason = codedError(TOTAL_TIMEOUT, "total timeout");
        if (status !== null) answered(true);
        else settle(failed(reason));
        controller?.abort(reason);
      }, totalTimeoutMs);
      try {
        agent.dispatch(
          { origin: url.origin, path: `${url.pathname}${url.search}`, method, headers: outgoingHeaders(headers, userAgent), body },
          {
            onRequestStart(c) {
              controller = c;
            },
            onResponseStart(_c, statusCode, responseHeaders) {
              if (statusCode < 200) return; // an informational answer; the final one follows
              status = statusCode;
              answerHeaders = flattenHeaders(responseHeaders);
            },
            onResponseData(c, chunk) {
              const room = cap - size;
              if (chunk.length > room) {
                chunks.push(chunk.subarray(0, room));
                size = cap;
                answered(true);
                c.abort(new Error("response body cap reached"));
                return;
              }
              chunks.push(chunk);
              size += chunk.length;
            },
            onResponseEnd() {
              if (status !== null) answered(false);
              else settle(failed(codedError("UND_ERR_SOCKET", "the connection closed without an answer")));
            },
            onResponseError(_c, err) {
              if (status !== null) answered(true);
              else settle(failed(err));
            },
          },
        );
      } catch (err) {
        settle(failed(err));
      }
    });
  }

  const post = ({ url, headers, body }: SendRequest): Promise<WebhookSendOutcome> => exchange("POST", url, headers, body, maxResponseBytes, webhookOutcome);
  const request = ({ url, method = "POST", headers = {}, body, maxResponseBytes: cap = maxResponseBytes }: RawRequest): Promise<RawOutcome> =>
    exchange(method, url, headers, body, cap, rawOutcome);

  return { send: post, request, close: () => agent.close() };
}

/** A webhook attempt keeps the status, the headers and the start of the body. */
function webhookOutcome(r: Exchanged): WebhookSendOutcome {
  if ("error" in r) return { ok: false, status: null, headers: {}, responseBody: null, error: r.error, durationMs: r.durationMs };
  const { ok, error } = judgeAnswer(r.status);
  // decoded first, so that invalid UTF-8 reaches the preview as the replacement character
  const responseBody = responsePreview(Buffer.from(r.bytes.toString("utf8"), "utf8"));
  return { ok, status: r.status, headers: r.headers, error, responseBody, durationMs: r.durationMs };
}

/** A token fetch keeps the body as text, and parsed when it is complete JSON. */
function rawOutcome(r: Exchanged): RawOutcome {
  if ("error" in r) return { ok: false, status: null, headers: {}, body: "", truncated: false, json: undefined, error: r.error, durationMs: r.durationMs };
  const { ok, error } = judgeAnswer(r.status);
  const text = r.bytes.toString("utf8");
  return { ok, status: r.status, headers: r.headers, body: text, truncated: r.truncated, json: r.truncated || text === "" ? undefined : parseJson(text), error, durationMs: r.durationMs };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
