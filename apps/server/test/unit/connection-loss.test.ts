// The classifier against the errors node-postgres and Prisma really throw: the unreachable-server
// ones are produced here against a closed port; the terminated-backend ones need PostgreSQL and
// are produced by test/api/connection-loss.test.ts, so their recorded shapes are checked here.
import { createServer } from "node:net";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { connectionLossCause, isConnectionLoss } from "../../src/lib/connection-loss.js";
import { PrismaClient } from "../../src/generated/prisma/client.js";

/** A loopback port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== "object" || address === null) throw new Error("no port");
  return address.port;
}

/** What pg's DatabaseError carries for a SQLSTATE (the fields @prisma/adapter-pg looks for). */
function databaseError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code, severity: "FATAL" });
}

/**
 * Prisma 7's error for a statement the driver adapter saw fail, as logged when
 * pg_terminate_backend hit a `findMany` through @prisma/adapter-pg: the SQLSTATE sits in
 * meta.driverAdapterError.cause, the top-level code is Prisma's generic P2039 (P2010 for raw SQL).
 */
function prismaDriverError(prismaCode: string, cause: Record<string, unknown>): Error {
  const adapterError = Object.assign(new Error(String(cause.kind)), { name: "DriverAdapterError", cause });
  return Object.assign(new Error("Invalid `prisma.org.findMany()` invocation"), {
    name: "PrismaClientKnownRequestError",
    code: prismaCode,
    meta: { driverAdapterError: adapterError },
    clientVersion: "7.10.1",
  });
}

describe("connectionLossCause", () => {
  it("When node-postgres cannot connect (nothing listens), Then it is a lost connection named by its socket error", async () => {
    const url = `postgresql://postgres:hunter2@127.0.0.1:${await closedPort()}/none`;
    const client = new pg.Client({ connectionString: url });
    const err = await client.connect().then(() => null, (e: unknown) => e);
    expect(connectionLossCause(err)).toBe("ECONNREFUSED");
  });

  it("When Prisma through @prisma/adapter-pg cannot reach the server, Then its P1001 and the raw query's wrapped kind are both losses", async () => {
    const pool = new pg.Pool({ connectionString: `postgresql://postgres@127.0.0.1:${await closedPort()}/none`, max: 1 });
    pool.on("error", () => undefined);
    const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
    try {
      const modelErr = await prisma.org.findMany().then(() => null, (e: unknown) => e);
      expect(connectionLossCause(modelErr)).toBe("P1001");
      const rawErr = await prisma.$queryRawUnsafe("SELECT 1").then(() => null, (e: unknown) => e);
      // P2010 "raw query failed" is not itself a loss: the adapter's kind underneath is
      expect(connectionLossCause(rawErr)).toBe("DatabaseNotReachable");
    } finally {
      await prisma.$disconnect();
      await pool.end();
    }
  });

  it.each([
    ["57P01", "terminating connection due to administrator command"],
    ["57P02", "terminating connection because of crash of another server process"],
    ["57P03", "the database system is starting up"],
    ["08006", "connection failure"],
    ["08003", "connection does not exist"],
    ["53300", "sorry, too many clients already"],
  ])("When PostgreSQL answers SQLSTATE %s, Then it is a lost connection", (code, message) => {
    expect(connectionLossCause(databaseError(code, message))).toBe(code);
    expect(connectionLossCause(prismaDriverError("P2039", { kind: "postgres", code, originalCode: code, message }))).toBe(code);
  });

  it.each([
    ["Connection terminated unexpectedly", "connection terminated"],
    ["Client has encountered a connection error and is not queryable", "connection error"],
    ["timeout exceeded when trying to connect", "connect timeout"],
  ])("When node-postgres throws a bare %j, Then it is a lost connection", (message, label) => {
    expect(connectionLossCause(new Error(message))).toBe(label);
  });

  it.each(["ECONNRESET", "EPIPE", "ETIMEDOUT"])("When the socket fails with %s, Then it is a lost connection", (code) => {
    expect(connectionLossCause(Object.assign(new Error(`write ${code}`), { code, syscall: "write", errno: -1 }))).toBe(code);
  });

  it("When Prisma reports the server closed the connection (P1017, kind ConnectionClosed), Then it is a lost connection", () => {
    expect(connectionLossCause(Object.assign(new Error("Server has closed the connection."), { code: "P1017" }))).toBe("P1017");
    expect(connectionLossCause(prismaDriverError("P2010", { kind: "ConnectionClosed" }))).toBe("ConnectionClosed");
  });

  it("When the loss is the cause of a wrapper, Then the wrapper is a lost connection too", () => {
    const wrapped = new Error("rollback failed", { cause: databaseError("57P01", "terminating connection due to administrator command") });
    expect(connectionLossCause(wrapped)).toBe("57P01");
    expect(connectionLossCause(new AggregateError([new Error("x"), Object.assign(new Error("connect ECONNREFUSED ::1:5432"), { code: "ECONNREFUSED" })]))).toBe("ECONNREFUSED");
  });

  it.each([
    ["a unique violation", databaseError("23505", "duplicate key value violates unique constraint")],
    ["a syntax error", databaseError("42601", "syntax error at or near")],
    ["a statement timeout (the statement failed, the connection lives)", databaseError("57014", "canceling statement due to statement timeout")],
    ["a serialization failure", databaseError("40001", "could not serialize access")],
    ["Prisma's unique violation", prismaDriverError("P2002", { kind: "UniqueConstraintViolation" })],
    ["Prisma's missing table", prismaDriverError("P2021", { kind: "TableDoesNotExist" })],
    ["a plain error", new Error("boom")],
    ["a string", "Connection terminated"],
    ["null", null],
  ])("When the error is %s, Then it is not a lost connection", (_name, err) => {
    expect(connectionLossCause(err)).toBeNull();
    expect(isConnectionLoss(err)).toBe(false);
  });

  it("When an error's causes form a cycle, Then the walk ends", () => {
    const a: Error & { cause?: unknown } = new Error("a");
    const b = new Error("b", { cause: a });
    a.cause = b;
    expect(connectionLossCause(a)).toBeNull();
  });

  it("When the error names a lost connection, Then the label never carries its message or connection string", async () => {
    const url = `postgresql://app:s3cret-password@127.0.0.1:${await closedPort()}/none`;
    const err = await new pg.Client({ connectionString: url }).connect().then(() => null, (e: unknown) => e);
    const label = connectionLossCause(err);
    expect(label).not.toBeNull();
    expect(label).not.toMatch(/s3cret|127\.0\.0\.1|app/);
  });
});
