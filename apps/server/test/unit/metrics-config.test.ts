import { describe, expect, it } from "vitest";
import { DEFAULT_METRICS_PORT, loadConfig } from "../../src/config.js";

describe("metrics listener configuration", () => {
  it("When ARS_METRICS_PORT is unset, Then metrics are on at the default port on loopback", () => {
    const c = loadConfig({});
    expect(c.metricsPort).toBe(DEFAULT_METRICS_PORT);
    expect(c.metricsHost).toBe("127.0.0.1");
  });

  it("When ARS_METRICS_PORT is 0, off or a port, Then it means any free port, no metrics, or that port", () => {
    expect(loadConfig({ ARS_METRICS_PORT: "0" }).metricsPort).toBe(0);
    expect(loadConfig({ ARS_METRICS_PORT: "off" }).metricsPort).toBeNull();
    expect(loadConfig({ ARS_METRICS_PORT: "9500", ARS_METRICS_HOST: "10.0.0.5" })).toMatchObject({ metricsPort: 9500, metricsHost: "10.0.0.5" });
  });

  it("When ARS_METRICS_PORT is not a port, or is the API's port, Then the configuration is refused naming it", () => {
    for (const bad of ["-1", "70000", "abc", "OFF", "1.5"]) expect(() => loadConfig({ ARS_METRICS_PORT: bad })).toThrow(/ARS_METRICS_PORT/);
    expect(() => loadConfig({ ARS_METRICS_PORT: "3000" })).toThrow(/ARS_METRICS_PORT must differ from PORT/);
    expect(() => loadConfig({ ARS_METRICS_PORT: "8080", PORT: "8080" })).toThrow(/ARS_METRICS_PORT must differ from PORT/);
  });
});
