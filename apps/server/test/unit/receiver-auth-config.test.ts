import { describe, expect, it } from "vitest";
import { parseReceiverAuthConfig, storedReceiverAuth, type ReceiverAuthConfig } from "../../src/lib/receiver-auth-config.js";

const variants: ReceiverAuthConfig[] = [
  { type: "none" },
  { type: "headers", header_names: ["X-Api-Key", "X-Tenant"] },
  { type: "basic", username: "audit-review" },
  { type: "oauth2_client_credentials", token_url: "https://auth.example.com/token", client_id: "ars", scope: "hooks", audience: null },
];

describe("receiver auth config", () => {
  it.each(variants)("when $type is stored, then it is read back as the same union member", (auth) => {
    const stored = storedReceiverAuth(auth);
    expect(stored.auth_type).toBe(auth.type);
    expect(stored.auth_config).not.toHaveProperty("type");
    // through JSON, as the jsonb column returns it
    expect(parseReceiverAuthConfig(stored.auth_type, JSON.parse(JSON.stringify(stored.auth_config)))).toEqual(auth);
  });

  it("when the stored object carries fields beyond its type's, then only the type's fields are read", () => {
    expect(parseReceiverAuthConfig("basic", { username: "u", password: "leaked" })).toEqual({ type: "basic", username: "u" });
    expect(parseReceiverAuthConfig("none", { header_names: ["X"] })).toEqual({ type: "none" });
  });

  it("when an OAuth2 config omits scope and audience, then they read as null", () => {
    expect(parseReceiverAuthConfig("oauth2_client_credentials", { token_url: "https://a.example/t", client_id: "c" })).toEqual({
      type: "oauth2_client_credentials",
      token_url: "https://a.example/t",
      client_id: "c",
      scope: null,
      audience: null,
    });
  });

  it.each([
    ["digest", {}],
    ["none", []],
    ["none", null],
    ["headers", {}],
    ["headers", { header_names: ["X", 5] }],
    ["basic", { username: 5 }],
    ["oauth2_client_credentials", { token_url: "https://a.example/t" }],
    ["oauth2_client_credentials", { token_url: "https://a.example/t", client_id: "c", scope: 1 }],
  ] as const)("when type %s holds %j, then it is refused (null)", (type, config) => {
    expect(parseReceiverAuthConfig(type, config as never)).toBeNull();
  });
});
