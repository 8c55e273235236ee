import type { AuthContext } from "../http/context.js";
import type { Services } from "../services/index.js";
import { sampleCodingEvaluation, sampleQuestionSet } from "./sample-data.js";

export interface SeedVolume {
  questionSets: number;
  questionsPerSet: number;
  codingEvaluations: number;
}

export const DEMO_VOLUME: SeedVolume = { questionSets: 12, questionsPerSet: 8, codingEvaluations: 40 };

/**
 * Seeds an org through the ingestion use cases (same validation and shapes as the pipeline).
 * Millions of rows are the benchmark seeder's job (bench/seed.mjs, in SQL).
 */
export async function seedOrg(services: Services, orgId: string, volume: SeedVolume, onProgress?: (done: number) => void) {
  // Rows would otherwise be written for an org that does not exist, reachable by no token.
  if (!(await services.tokens.findOrg(orgId))) throw new Error(`no org with id ${orgId}`);
  const auth: AuthContext = { orgId, tokenId: "seed", scopes: ["internal:ingest"] };
  let done = 0;
  for (let i = 0; i < volume.questionSets; i++) {
    await services.questionSets.ingestQuestionSet(auth, sampleQuestionSet(i, volume.questionsPerSet));
    if (++done % 1000 === 0) onProgress?.(done);
  }
  for (let i = 0; i < volume.codingEvaluations; i++) {
    await services.codingEvaluations.ingestCodingEvaluation(auth, sampleCodingEvaluation(i));
    if (++done % 1000 === 0) onProgress?.(done);
  }
  return done;
}
