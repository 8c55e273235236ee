// Receiver authentication: the headers an endpoint's `authentication` adds to each delivery.
//
// Secrets live sealed in `auth_secret_enc` and are opened only here, right before a request;
// nothing this module returns as an error, and nothing it logs, contains one. OAuth2 tokens
// are fetched through the sender's `request()`, so the token URL gets the same treatment as a
// receiver URL: resolved once, every address vetted, the socket pinned to the vetted address,
// TLS verified, redirects not followed.
import type { AuthenticationOAuth2 } from "@audit-review/api-types/internal";
import { LRUCache } from "lru-cache";
import type { WebhookEndpoint } from "../generated/prisma/client.js";
import { isRecord, recordOf } from "../lib/narrow.js";
import { parseReceiverAuthConfig } from "../lib/receiver-auth-config.js";
import type { SecretBox } from "../lib/secret-box.js";
import type { Sender } from "./sender.js";

/** `auth_config` holds the non-secret parts: header_names, username, token_url, client_id, scope, audience. */
export type AuthEndpoint = Pick<WebhookEndpoint, "id" | "auth_type" | "auth_config" | "auth_secret_enc">;

export interface AuthError {
  code: "auth_error";
  /** Safe to store and show. */
  message: string;
}

export type AuthResult =
  | {
      ok: true;
      headers: Record<string, string>;
      /** true when a 401 may be cured by fetching a new token (OAuth2) */
      refreshable: boolean;
      /** every secret behind these headers (values, the Basic password and pair, token, client secret): cut from what is stored of the answer */
      secrets: readonly string[];
    }
  | { ok: false; error: AuthError };

export interface ReceiverAuth {
  headersFor(endpoint: AuthEndpoint): Promise<AuthResult>;
  /**
   * Forgets the endpoint's cached token after the receiver refused it with a 401. Pass the
   * headers that were refused: a newer token fetched meanwhile by another delivery is kept.
   */
  invalidate(endpoint: AuthEndpoint, refused: Record<string, string>): void;
  /** Forgets every token of the endpoint (it was updated or deleted). */
  forget(endpointId: string): void;
}

export interface ReceiverAuthOptions {
  sender: Pick<Sender, "request">;
  secretBox: SecretBox;
  /** milliseconds since the epoch, on the engine's clock (so expiry is testable without waiting) */
  now: () => number;
  /** Refresh this long before `expires_in` runs out, at most... */
  refreshMarginMs?: number;
  /** ...and at most this fraction of the token's lifetime (short-lived tokens stay useful). */
  refreshFraction?: number;
  /** Lifetime assumed when the token server gives no `expires_in`. */
  defaultLifetimeMs?: number;
  /** Cap on the token server's answer. */
  maxTokenResponseBytes?: number;
}

/** What `auth_config` holds for OAuth2 (parsed by lib/receiver-auth-config.ts). */
type OAuthConfig = AuthenticationOAuth2;

interface CachedToken {
  token: string;
  clientSecret: string;
  /** when to stop using it: shortly before it really expires */
  refreshAt: number;
}

const DEFAULT_REFRESH_MARGIN_MS = 30_000;
const DEFAULT_REFRESH_FRACTION = 0.1;
const DEFAULT_LIFETIME_MS = 5 * 60_000;
const DEFAULT_TOKEN_RESPONSE_BYTES = 64 * 1024;
const MAX_TOKENS = 10_000;

const authError = (message: string): AuthResult => ({ ok: false, error: { code: "auth_error", message } });

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "the token URL";
  }
}

/** The token and its lifetime in milliseconds (null when not given), or why the answer is unusable. */
function parseTokenResponse(json: unknown): { token: string; expiresInMs: number | null } | { problem: string } {
  if (!isRecord(json)) return { problem: "is not a JSON object" };
  const body = json;
  if (typeof body.access_token !== "string" || body.access_token === "") return { problem: "has no access_token" };
  if (body.token_type !== undefined && String(body.token_type).toLowerCase() !== "bearer") {
    return { problem: `has token_type ${JSON.stringify(String(body.token_type).slice(0, 40))}, not Bearer` };
  }
  const raw = body.expires_in;
  const seconds = typeof raw === "number" ? raw : typeof raw === "string" && /^\d+$/.test(raw) ? Number(raw) : null;
  return { token: body.access_token, expiresInMs: seconds === null || !Number.isFinite(seconds) ? null : seconds * 1000 };
}

export function createReceiverAuth({
  sender,
  secretBox,
  now,
  refreshMarginMs = DEFAULT_REFRESH_MARGIN_MS,
  refreshFraction = DEFAULT_REFRESH_FRACTION,
  defaultLifetimeMs = DEFAULT_LIFETIME_MS,
  maxTokenResponseBytes = DEFAULT_TOKEN_RESPONSE_BYTES,
}: ReceiverAuthOptions): ReceiverAuth {
  // Bounded: a token is kept until shortly before it expires, and at most for MAX_TOKENS endpoints at once.
  const tokens = new LRUCache<string, CachedToken>({ max: MAX_TOKENS });
  // One fetch per key at a time: a burst of deliveries to one endpoint asks the token server once.
  const fetching = new Map<string, Promise<AuthResult>>();

  function secretsOf(endpoint: AuthEndpoint): Record<string, unknown> | null {
    if (!endpoint.auth_secret_enc) return null;
    try {
      return recordOf(JSON.parse(secretBox.open(endpoint.auth_secret_enc)));
    } catch {
      return null;
    }
  }

  // The client id and token URL are part of the key: a token is only ever sent where it was meant to go.
  const keyOf = (endpoint: AuthEndpoint, c: OAuthConfig) => `${endpoint.id}\n${c.token_url}\n${c.client_id}`;

  function prune(at: number): void {
    for (const [key, cached] of [...tokens.entries()]) if (cached.refreshAt <= at) tokens.delete(key);
  }

  async function fetchToken(key: string, c: OAuthConfig, clientSecret: string): Promise<AuthResult> {
    const form = new URLSearchParams({ grant_type: "client_credentials", client_id: c.client_id, client_secret: clientSecret });
    if (c.scope) form.set("scope", c.scope);
    if (c.audience) form.set("audience", c.audience);
    const host = hostOf(c.token_url);
    const requestedAt = now();
    const res = await sender.request({
      url: c.token_url,
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: form.toString(),
      maxResponseBytes: maxTokenResponseBytes,
    });
    // Only the sender's own messages (host, status, error class) are quoted: never the body,
    // which could echo what we sent.
    if (res.error && res.status === null) return authError(`token request to ${host} failed: ${res.error.message}`);
    if (!res.ok) return authError(`token endpoint ${host} answered ${res.status}`);
    const parsed = parseTokenResponse(res.json);
    if ("problem" in parsed) return authError(`token response from ${host} ${parsed.problem}`);

    const lifetime = parsed.expiresInMs ?? defaultLifetimeMs;
    if (lifetime > 0) {
      const margin = Math.min(refreshMarginMs, lifetime * refreshFraction);
      // Counted from when we asked: the token's clock started no later than that.
      const refreshAt = requestedAt + lifetime - margin;
      prune(now());
      if (refreshAt > now()) tokens.set(key, { token: parsed.token, clientSecret, refreshAt });
    }
    return { ok: true, headers: { authorization: `Bearer ${parsed.token}` }, refreshable: true, secrets: [parsed.token, clientSecret] };
  }

  async function oauth2(endpoint: AuthEndpoint, c: OAuthConfig): Promise<AuthResult> {
    const key = keyOf(endpoint, c);
    const cached = tokens.get(key);
    if (cached && cached.refreshAt > now()) {
      return { ok: true, headers: { authorization: `Bearer ${cached.token}` }, refreshable: true, secrets: [cached.token, cached.clientSecret] };
    }
    const pending = fetching.get(key);
    if (pending) return pending;
    const secret = secretsOf(endpoint)?.client_secret;
    if (typeof secret !== "string") return authError("the stored OAuth2 client secret cannot be read");
    const started = fetchToken(key, c, secret).finally(() => fetching.delete(key));
    fetching.set(key, started);
    return started;
  }

  return {
    async headersFor(endpoint) {
      const config = parseReceiverAuthConfig(endpoint.auth_type, endpoint.auth_config);
      if (!config) return authError(`the stored authentication settings (type ${JSON.stringify(endpoint.auth_type)}) cannot be read`);
      switch (config.type) {
        case "none":
          return { ok: true, headers: {}, refreshable: false, secrets: [] };
        case "headers": {
          const headers = secretsOf(endpoint)?.headers;
          if (!isRecord(headers) || !Object.values(headers).every((v) => typeof v === "string")) return authError("the stored receiver headers cannot be read");
          const values = Object.values(headers).map(String);
          return { ok: true, headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, String(v)])), refreshable: false, secrets: values };
        }
        case "basic": {
          const password = secretsOf(endpoint)?.password;
          if (typeof password !== "string") return authError("the stored Basic password cannot be read");
          const pair = `${config.username}:${password}`;
          const credentials = Buffer.from(pair, "utf8").toString("base64");
          return { ok: true, headers: { authorization: `Basic ${credentials}` }, refreshable: false, secrets: [pair, password, credentials] };
        }
        case "oauth2_client_credentials":
          return oauth2(endpoint, config);
      }
    },

    invalidate(endpoint, refused) {
      const config = parseReceiverAuthConfig(endpoint.auth_type, endpoint.auth_config);
      if (config?.type !== "oauth2_client_credentials") return;
      const key = keyOf(endpoint, config);
      if (refused.authorization === `Bearer ${tokens.get(key)?.token}`) tokens.delete(key);
    },

    forget(endpointId) {
      const prefix = `${endpointId}\n`;
      for (const key of [...tokens.keys()]) if (key.startsWith(prefix)) tokens.delete(key);
    },
  };
}
