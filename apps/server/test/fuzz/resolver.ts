import type { Resolver } from "../../src/net/resolver.js";

/**
 * Every DNS name answers one public address, so generated webhook URLs pass or fail on the URL
 * rules alone (IP literals, reserved names, schemes are still refused before any lookup).
 * Nothing is sent: the fuzzed server runs without its dispatcher.
 */
export const everyNameResolves: Resolver = async () => [{ address: "93.184.216.34", family: 4 }];
