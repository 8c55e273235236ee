import type { LookupAddress, LookupOptions } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import type { Readable } from "node:stream";
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

async function readCapped(body: Readable, cap: number): Promise<{ bytes: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  try {
    for await (const piece of body) {
      const chunk = Buffer.isBuffer(piece) ? piece : Buffer.from(String(piece));
      const room = cap - size;
      if (chunk.length > room) {
        chunks.push(chunk.subarray(0, room));
        truncated = true;
        break; // leaving the loop destroys the stream: the rest is never read
      }
      chunks.push(chunk);
      size += chunk.length;
    }
  } catch {
    // The status line already is the receiver's answer; a body cut short changes nothing.
    truncated = true;
  } finally {
    if (!body.destroyed) body.destroy();
  }
  return { bytes: Buffer.concat(chunks), truncated };
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

  /** A request whose answer is read up to the cap and parsed when it is JSON: token fetches and the like. */
  async function exchange(req: Required<Omit<RawRequest, "body">> & { body: string | undefined }): Promise<RawOutcome> {
    const started = performance.now();
    const done = (fields: Omit<RawOutcome, "durationMs">): RawOutcome => ({ ...fields, durationMs: Math.round(performance.now() - started) });
    const empty = { status: null, headers: {}, body: "", truncated: false, json: undefined, ok: false };

    const checked = preflight(req.url);
    if ("error" in checked) return done({ ...empty, error: checked.error });
    const { url } = checked;

    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(codedError(TOTAL_TIMEOUT, "total timeout")), totalTimeoutMs);
    try {
      const res = await agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: req.method,
        headers: outgoingHeaders(req.headers, userAgent),
        body: req.body,
        signal: controller.signal,
      });
      const status = res.statusCode;
      const headers = flattenHeaders(res.headers);
      const { bytes, truncated } = await readCapped(res.body, req.maxResponseBytes);
      const { ok, error } = judgeAnswer(status);
      const body = bytes.toString("utf8");
      return done({
        ok,
        status,
        headers,
        body,
        truncated,
        json: truncated || body === "" ? undefined : parseJson(body),
        error,
      });
    } catch (err) {
      const cause = controller.signal.aborted ? controller.signal.reason : err;
      return done({ ...empty, error: classifyError(cause, { hostname: url.hostname, connectTimeoutMs, totalTimeoutMs }) });
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * One webhook attempt through undici's dispatch handler rather than `request`: no response
   * stream, no abort signal, no async iterator per answer (bench/NOTES.md: about a quarter of
   * the client's CPU per request). Same agent, same timeouts, same cap and error vocabulary.
   */
  function post({ url, headers, body }: SendRequest): Promise<WebhookSendOutcome> {
    const started = performance.now();
    const done = (o: Omit<WebhookSendOutcome, "durationMs">): WebhookSendOutcome => ({ ...o, durationMs: Math.round(performance.now() - started) });
    const checked = preflight(url);
    if ("error" in checked) return Promise.resolve(done({ ok: false, status: null, headers: {}, responseBody: null, error: checked.error }));
    const { url: target } = checked;
    const failed = (cause: unknown) =>
      done({ ok: false, status: null, headers: {}, responseBody: null, error: classifyError(cause, { hostname: target.hostname, connectTimeoutMs, totalTimeoutMs }) });

    return new Promise((resolve) => {
      let controller: Dispatcher.DispatchController | null = null;
      let status: number | null = null;
      let answerHeaders: Record<string, string> = {};
      const chunks: Buffer[] = [];
      let size = 0;
      let settled = false;
      const settle = (outcome: WebhookSendOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(outcome);
      };
      // what arrived is the answer: its status decides, a body cut short changes nothing
      const answered = () => {
        if (settled) return;
        const { ok, error } = judgeAnswer(status!);
        const text = Buffer.concat(chunks).toString("utf8");
        settle(done({ ok, status, headers: answerHeaders, error, responseBody: responsePreview(Buffer.from(text, "utf8")) }));
      };
      const timer = setTimeout(() => {
        const reason = codedError(TOTAL_TIMEOUT, "total timeout");
        if (status !== null) answered();
        else settle(failed(reason));
        controller?.abort(reason);
      }, totalTimeoutMs);
      try {
        agent.dispatch(
          { origin: target.origin, path: `${target.pathname}${target.search}`, method: "POST", headers: outgoingHeaders(headers, userAgent), body },
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
              const room = maxResponseBytes - size;
              if (chunk.length > room) {
                chunks.push(chunk.subarray(0, room));
                size = maxResponseBytes;
                // the rest is never read: the connection closes rather than carry it
                answered();
                c.abort(new Error("response body cap reached"));
                return;
              }
              chunks.push(chunk);
              size += chunk.length;
            },
            onResponseEnd() {
              answered();
            },
            onResponseError(_c, err) {
              if (status !== null) answered();
              else settle(failed(err));
            },
          },
        );
      } catch (err) {
        settle(failed(err));
      }
    });
  }

  return {
    send: post,
    request({ url, method = "POST", headers = {}, body, maxResponseBytes: cap = maxResponseBytes }) {
      return exchange({ url, method, headers, body, maxResponseBytes: cap });
    },
    close: () => agent.close(),
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
