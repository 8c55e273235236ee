import { describe, expect, it } from "vitest";
import { DEFAULT_SCHEDULE_MS, nextRetryDelayMs, parseRetryAfter } from "../../src/delivery/retry-schedule.js";

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const mid = () => 0.5; // no jitter: 1 + 0.2 * (2 * 0.5 - 1) = 1

describe("DEFAULT_SCHEDULE_MS", () => {
  it("When read, Then it is the 8 attempts of docs/delivery.md#states", () => {
    expect(DEFAULT_SCHEDULE_MS).toEqual([0, 5 * S, 5 * M, 30 * M, 2 * H, 5 * H, 10 * H, 10 * H]);
  });
});

describe("nextRetryDelayMs", () => {
  it.each([
    [1, 5 * S],
    [2, 5 * M],
    [3, 30 * M],
    [4, 2 * H],
    [5, 5 * H],
    [6, 10 * H],
    [7, 10 * H],
  ])("When %i attempts were made, Then the next waits %i ms", (attempt, expected) => {
    expect(nextRetryDelayMs({ attempt, random: mid })).toBe(expected);
  });

  it("When all 8 attempts were made, Then there is no next attempt", () => {
    expect(nextRetryDelayMs({ attempt: 8, random: mid })).toBeNull();
    expect(nextRetryDelayMs({ attempt: 9, random: mid })).toBeNull();
  });

  it("When random is at its extremes, Then the delay spreads over ±20 %", () => {
    expect(nextRetryDelayMs({ attempt: 2, random: () => 0 })).toBe(4 * M);
    expect(nextRetryDelayMs({ attempt: 2, random: () => 0.999999 })).toBe(Math.round(5 * M * (1 + 0.2 * (2 * 0.999999 - 1))));
    expect(nextRetryDelayMs({ attempt: 2, random: () => 0.75 })).toBe(5.5 * M);
  });

  it("When a custom schedule and jitter are given, Then they are used", () => {
    expect(nextRetryDelayMs({ attempt: 1, schedule: [0, 100, 200], jitter: 0.5, random: () => 0 })).toBe(50);
    expect(nextRetryDelayMs({ attempt: 2, schedule: [0, 100, 200], jitter: 0, random: () => 0 })).toBe(200);
    expect(nextRetryDelayMs({ attempt: 3, schedule: [0, 100, 200], jitter: 0, random: () => 0 })).toBeNull();
  });

  describe("Retry-After", () => {
    it("When a 503 asks for a wait inside [delay, 2×delay], Then it is honoured", () => {
      expect(nextRetryDelayMs({ attempt: 2, random: mid, status: 503, retryAfterMs: 7 * M })).toBe(7 * M);
    });

    it("When a 503 asks for less than the delay, Then the delay stands", () => {
      expect(nextRetryDelayMs({ attempt: 2, random: mid, status: 503, retryAfterMs: 1 * S })).toBe(5 * M);
    });

    it("When a 503 asks for more than twice the delay, Then it is capped at twice the delay", () => {
      expect(nextRetryDelayMs({ attempt: 2, random: mid, status: 503, retryAfterMs: 5 * H })).toBe(10 * M);
    });

    it("When a 429 asks for a long wait, Then it is clamped too (and at least a minute)", () => {
      expect(nextRetryDelayMs({ attempt: 3, random: mid, status: 429, retryAfterMs: 45 * M })).toBe(45 * M);
      expect(nextRetryDelayMs({ attempt: 3, random: mid, status: 429, retryAfterMs: 10 * H })).toBe(60 * M);
    });

    it("When Retry-After comes with another status, Then it is ignored", () => {
      expect(nextRetryDelayMs({ attempt: 2, random: mid, status: 500, retryAfterMs: 8 * M })).toBe(5 * M);
      expect(nextRetryDelayMs({ attempt: 2, random: mid, retryAfterMs: 8 * M })).toBe(5 * M);
    });
  });

  describe("minimum back-off", () => {
    it.each([429, 502, 504])("When the receiver answered %i, Then the next wait is at least 60 s", (status) => {
      expect(nextRetryDelayMs({ attempt: 1, random: mid, status })).toBe(60 * S);
    });

    it("When the attempt timed out, Then the next wait is at least 60 s", () => {
      expect(nextRetryDelayMs({ attempt: 1, random: mid, errorCode: "timeout" })).toBe(60 * S);
    });

    it("When a 429 says Retry-After 1 s on a 5 s slot, Then the minute floor still wins", () => {
      expect(nextRetryDelayMs({ attempt: 1, random: mid, status: 429, retryAfterMs: 1 * S })).toBe(60 * S);
    });

    it.each([500, 503, 404])("When the receiver answered %i, Then no floor applies", (status) => {
      expect(nextRetryDelayMs({ attempt: 1, random: mid, status })).toBe(5 * S);
    });

    it("When the scheduled delay is already longer, Then the floor changes nothing", () => {
      expect(nextRetryDelayMs({ attempt: 2, random: mid, status: 502 })).toBe(5 * M);
    });

    it("When minBackoffMs is configured, Then it replaces the minute", () => {
      expect(nextRetryDelayMs({ attempt: 1, random: mid, errorCode: "timeout", minBackoffMs: 10 * S })).toBe(10 * S);
    });

    it("When connection errors happen, Then no floor applies", () => {
      expect(nextRetryDelayMs({ attempt: 1, random: mid, errorCode: "connection_error" })).toBe(5 * S);
    });
  });

  it("When attempt is not a positive integer, Then it throws", () => {
    expect(() => nextRetryDelayMs({ attempt: 0, random: mid })).toThrow(RangeError);
    expect(() => nextRetryDelayMs({ attempt: 1.5, random: mid })).toThrow(RangeError);
  });
});

describe("parseRetryAfter", () => {
  const now = new Date("2026-11-21T09:30:00.000Z");

  it("When given delta-seconds, Then it returns milliseconds", () => {
    expect(parseRetryAfter("120", now)).toBe(120_000);
    expect(parseRetryAfter(" 0 ", now)).toBe(0);
  });

  it.each([
    ["Sat, 21 Nov 2026 09:32:00 GMT", 120_000],
    ["Saturday, 21-Nov-26 09:31:00 GMT", 60_000],
    ["Sat Nov 21 09:30:30 2026", 30_000],
  ])("When given the HTTP-date %j, Then it returns the time until then", (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });

  it("When the date is in the past, Then it returns 0", () => {
    expect(parseRetryAfter("Sat, 21 Nov 2026 09:00:00 GMT", now)).toBe(0);
  });

  it.each([null, undefined, "", "soon", "-5", "1.5", "2026-11-21T09:32:00Z", "Sat, 21 Nov 2026 09:32:00 PST", "99999999999999999999"])(
    "When given %j, Then it returns null",
    (value) => {
      expect(parseRetryAfter(value, now)).toBeNull();
    },
  );
});
