import { Prisma } from "../generated/prisma/client.js";

export const isUniqueViolation = (err: unknown): boolean =>
  err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002";

/**
 * Runs an upsert transaction again when it lost a race to a concurrent insert of the same key:
 * the rerun sees the winner's committed row and takes the update path instead of answering 500.
 */
export async function retryOnUniqueViolation<T>(run: () => Promise<T>, attempts = 3): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await run();
    } catch (err) {
      if (i >= attempts || !isUniqueViolation(err)) throw err;
    }
  }
}
