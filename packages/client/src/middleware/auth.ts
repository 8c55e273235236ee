import type { Middleware } from "openapi-fetch";

export type TokenSource = () => string | Promise<string>;

/**
 * Adds `Authorization: Bearer <token>` to every request. `getToken` is called once per request,
 * so a rotating or refreshed token is picked up without recreating the client (cache inside it
 * if fetching is expensive).
 */
export function bearerAuth(getToken: TokenSource): Middleware {
  return {
    async onRequest({ request }) {
      const token = await getToken();
      if (typeof token !== "string" || token.length === 0) {
        throw new TypeError("@audit-review/client: the access token must be a non-empty string");
      }
      request.headers.set("Authorization", `Bearer ${token}`);
      return request;
    },
  };
}
