import { readFileSync } from "node:fs";
import type { RequestHandler } from "express";
import * as OpenApiValidator from "express-openapi-validator";
import { parse } from "yaml";

type Json = unknown;

/**
 * ajv validates a discriminated oneOf precisely (one branch, picked by `type`), giving errors
 * such as "password is required" instead of every branch's complaints; but it refuses
 * `discriminator.mapping`, which the contract needs for other-language generators. The
 * validator gets a copy without the mappings; each branch's `type` enum carries the same facts.
 */
function withoutDiscriminatorMappings(node: Json): Json {
  if (Array.isArray(node)) return node.map(withoutDiscriminatorMappings);
  if (node && typeof node === "object") {
    const out: Record<string, Json> = {};
    for (const [k, v] of Object.entries(node)) {
      if (k === "discriminator" && v && typeof v === "object") {
        out[k] = { propertyName: (v as { propertyName: string }).propertyName };
      } else {
        out[k] = withoutDiscriminatorMappings(v);
      }
    }
    return out;
  }
  return node;
}

export function contractValidator(specPath: string, validateResponses: boolean): RequestHandler[] {
  const spec = withoutDiscriminatorMappings(parse(readFileSync(specPath, "utf8")));
  return OpenApiValidator.middleware({
    apiSpec: spec as Parameters<typeof OpenApiValidator.middleware>[0]["apiSpec"],
    // every offending field in one problem (DESIGN §1), not only the first; bodies are size-capped
    // before validation, which bounds the extra work ajv's allErrors mode does
    validateRequests: { allowUnknownQueryParameters: false, discriminator: true, allErrors: true },
    validateResponses: validateResponses ? { removeAdditional: false } : false,
    validateSecurity: false,
    validateFormats: true,
    ajvFormats: { mode: "full" },
  });
}
