import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";

describe("ARS_PORTAL_FRAME_ANCESTORS and ARS_PUBLIC_URL", () => {
  it("When unset, Then no page may frame the portal and links use the request's own origin", () => {
    const c = loadConfig({});
    expect(c.portalFrameAncestors).toBe("'none'");
    expect(c.publicUrl).toBeUndefined();
  });

  it("When origins are listed (spaces or commas, 'self', a subdomain wildcard), Then they become the CSP's frame-ancestors", () => {
    expect(loadConfig({ ARS_PORTAL_FRAME_ANCESTORS: "https://app.example.com, http://localhost:8080 self https://*.example.org/" }).portalFrameAncestors).toBe(
      "https://app.example.com http://localhost:8080 'self' https://*.example.org",
    );
    expect(loadConfig({ ARS_PORTAL_FRAME_ANCESTORS: "none" }).portalFrameAncestors).toBe("'none'");
  });

  it("When a value is not an origin (a path, a bare *, a directive smuggled in), Then the start is refused naming the variable", () => {
    for (const bad of ["*", "https://app.example.com/embed", "https://a.example.com; script-src *", "javascript:alert(1)", "app.example.com"]) {
      expect(() => loadConfig({ ARS_PORTAL_FRAME_ANCESTORS: bad }), bad).toThrow(/ARS_PORTAL_FRAME_ANCESTORS/);
    }
  });

  it("When ARS_PUBLIC_URL is an origin, Then it is kept without its slash; a path or another scheme is refused", () => {
    expect(loadConfig({ ARS_PUBLIC_URL: "https://api.example.com/" }).publicUrl).toBe("https://api.example.com");
    for (const bad of ["https://api.example.com/ars", "ftp://api.example.com", "not a url", "https://u:p@api.example.com"]) {
      expect(() => loadConfig({ ARS_PUBLIC_URL: bad }), bad).toThrow(/ARS_PUBLIC_URL/);
    }
  });
});
