// The one reader (and writer) of an endpoint's stored receiver authentication: `auth_type` plus
// the non-secret `auth_config` JSON object (the secrets live sealed in `auth_secret_enc`). The
// database guarantees the type and that the config is an object; this module checks the
// object's fields once, so the presenter and the delivery engine work on a typed union.
import type { AuthenticationBasic, AuthenticationHeaders, AuthenticationNone, AuthenticationOAuth2 } from "@audit-review/api-types/internal";
import type { Prisma } from "../generated/prisma/client.js";

/** What an endpoint's authentication is, without any secret: the API's read shape. */
export type ReceiverAuthConfig = AuthenticationNone | AuthenticationHeaders | AuthenticationBasic | AuthenticationOAuth2;

export type StoredReceiverAuth = { auth_type: ReceiverAuthConfig["type"]; auth_config: Prisma.InputJsonObject };

type JsonObject = Record<string, Prisma.JsonValue | undefined>;

const isObject = (v: Prisma.JsonValue | undefined): v is Prisma.JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);
const isString = (v: Prisma.JsonValue | undefined): v is string => typeof v === "string";
const stringOrNull = (v: Prisma.JsonValue | undefined): string | null | undefined => (v === null || v === undefined ? null : isString(v) ? v : undefined);

/** The stored columns as the union; null when they do not hold a valid authentication. */
export function parseReceiverAuthConfig(authType: string, config: Prisma.JsonValue): ReceiverAuthConfig | null {
  if (!isObject(config)) return null;
  const c: JsonObject = config;
  switch (authType) {
    case "none":
      return { type: "none" };
    case "headers": {
      const names = c.header_names;
      if (!Array.isArray(names) || !names.every(isString)) return null;
      return { type: "headers", header_names: names };
    }
    case "basic":
      return isString(c.username) ? { type: "basic", username: c.username } : null;
    case "oauth2_client_credentials": {
      const scope = stringOrNull(c.scope);
      const audience = stringOrNull(c.audience);
      if (!isString(c.token_url) || !isString(c.client_id) || scope === undefined || audience === undefined) return null;
      return { type: "oauth2_client_credentials", token_url: c.token_url, client_id: c.client_id, scope, audience };
    }
    default:
      return null;
  }
}

/** The union as the two stored columns (every field named: nothing else reaches the row). */
export function storedReceiverAuth(auth: ReceiverAuthConfig): StoredReceiverAuth {
  switch (auth.type) {
    case "none":
      return { auth_type: auth.type, auth_config: {} };
    case "headers":
      return { auth_type: auth.type, auth_config: { header_names: auth.header_names } };
    case "basic":
      return { auth_type: auth.type, auth_config: { username: auth.username } };
    case "oauth2_client_credentials":
      return {
        auth_type: auth.type,
        auth_config: { token_url: auth.token_url, client_id: auth.client_id, scope: auth.scope, audience: auth.audience },
      };
  }
}
