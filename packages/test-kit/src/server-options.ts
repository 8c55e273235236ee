// What every test or CI server starts with, whoever starts it (the server's tests, the client's
// tests, scripts/ci): the kit cannot import the server, so these are plain values that match
// StartServerOptions' fields.
import { randomBytes } from "node:crypto";

/** A public unicast address that fake DNS answers with: URL checks accept it, nothing is sent to it. */
export const PUBLIC_TEST_ADDRESS = "93.184.216.34";

export interface TestServerOptions {
  port: 0;
  host: "127.0.0.1";
  /** a fresh key per server: secrets of one test's database mean nothing to another */
  encryptionKey: string;
  /** every response is checked against the contract */
  validateResponses: true;
  rateLimitPerMinute: 0;
  /** tests that deliver turn the dispatcher on themselves */
  dispatcher: false;
  /** metrics on, as in production, on any free loopback port (servers of parallel tests never collide) */
  metricsPort: 0;
}

export function testServerOptions(): TestServerOptions {
  return {
    port: 0,
    host: "127.0.0.1",
    encryptionKey: randomBytes(32).toString("base64"),
    validateResponses: true,
    rateLimitPerMinute: 0,
    dispatcher: false,
    metricsPort: 0,
  };
}

/**
 * A static-resolver table: `publicHosts` answer PUBLIC_TEST_ADDRESS, `loopbackHosts` answer
 * 127.0.0.1 (real receivers; the server must then be told to allow 127.0.0.1/32).
 */
export function resolverTable({ publicHosts = [], loopbackHosts = [] }: { publicHosts?: readonly string[]; loopbackHosts?: readonly string[] }): Record<string, string[]> {
  return Object.fromEntries([
    ...publicHosts.map((host) => [host, [PUBLIC_TEST_ADDRESS]] as const),
    ...loopbackHosts.map((host) => [host, ["127.0.0.1"]] as const),
  ]);
}
