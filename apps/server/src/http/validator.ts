import type { ProblemIssue } from "@audit-review/api-types/internal";
import type { ErrorRequestHandler, Request, RequestHandler } from "express";
import * as OpenApiValidator from "express-openapi-validator";
import { ValidationErrors } from "../lib/errors.js";
import type { Contract } from "../contract/contract.js";
import { isRecord } from "../lib/narrow.js";
import { operationOf } from "./operations.js";
import { toIssue } from "./problem.js";
import { checkRequest, dedupeIssues } from "./request-hygiene.js";
import { compileValidatorRoutesFromContract } from "./validator-routes.js";

type Json = unknown;

/**
 * ajv validates a discriminated oneOf precisely (one branch, picked by `type`), giving errors
 * such as "password is required" instead of every branch's complaints; but it refuses
 * `discriminator.mapping`, which the contract needs for other-language generators. The
 * validator gets a copy without the mappings; each branch's `type` enum carries the same facts.
 *
 * ajv's discriminator also replaces the oneOf and applies to objects only, so a discriminated
 * schema without `type: object` would let `"none"`, `5`, `[]` or `null` through unchecked.
 * A discriminator only makes sense on an object, so the copy says so wherever the contract
 * left it implicit.
 */
function forAjv(node: Json): Json {
  if (Array.isArray(node)) return node.map(forAjv);
  if (node && typeof node === "object") {
    const out: Record<string, Json> = {};
    for (const [k, v] of Object.entries(node)) {
      if (k === "discriminator" && v && typeof v === "object") {
        out[k] = { propertyName: isRecord(v) ? v.propertyName : undefined };
      } else {
        out[k] = forAjv(v);
      }
    }
    if ("discriminator" in out && out.type === undefined) out.type = "object";
    return out;
  }
  return node;
}

type OpenApiDocument = Exclude<Parameters<typeof OpenApiValidator.middleware>[0]["apiSpec"], string>;

/** The validator reads the contract itself; this only checks it was handed a contract at all. */
function isOpenApi3(doc: unknown): doc is OpenApiDocument {
  return isRecord(doc) && typeof doc.openapi === "string" && doc.openapi.startsWith("3.0") && isRecord(doc.info) && isRecord(doc.paths);
}

const found = new WeakMap<Request, ProblemIssue[]>();

/**
 * What the schema validator cannot see (see request-hygiene.ts). Offending query pairs are
 * removed before the validator runs, so it validates the rest and one problem lists both.
 * The validator re-reads the raw query from `originalUrl` (its parameter mutator), hence both are
 * rewritten: without it the validator stops at the pairs refused here, and the problem no longer
 * names its own findings beside them (input-hygiene.test.ts, "…mix, then all are named").
 */
function hygiene(contract: Contract): RequestHandler {
  return (req, _res, next) => {
    const q = req.originalUrl.indexOf("?");
    const rawQuery = q < 0 ? "" : req.originalUrl.slice(q + 1);
    const { issues, clean } = checkRequest(operationOf(contract, req), rawQuery, req.body);
    if (issues.length) found.set(req, issues);
    if (clean !== rawQuery) {
      const suffix = clean ? `?${clean}` : "";
      req.originalUrl = (q < 0 ? req.originalUrl : req.originalUrl.slice(0, q)) + suffix;
      req.url = req.url.split("?")[0] + suffix;
    }
    next();
  };
}

interface ValidatorFailure {
  status?: number;
  errors?: Array<{ path?: string; message?: string }>;
}

/** One problem naming everything: the raw checks' issues and the schema validator's. */
const mergeFailure: ErrorRequestHandler = (err: ValidatorFailure, req, _res, next) => {
  const early = found.get(req) ?? [];
  if (err?.status === 400 && Array.isArray(err.errors)) return next(new ValidationErrors(dedupeIssues([...early, ...err.errors.map(toIssue)])));
  next(err);
};

const failOnEarlyIssues: RequestHandler = (req, _res, next) => {
  const early = found.get(req);
  next(early ? new ValidationErrors(early) : undefined);
};

export function contractValidator(contract: Contract, validateResponses: boolean): Array<RequestHandler | ErrorRequestHandler> {
  const spec = forAjv(contract.document);
  if (!isOpenApi3(spec)) throw new Error("the contract is not an OpenAPI 3.0 document");
  compileValidatorRoutesFromContract(contract);
  const validator = OpenApiValidator.middleware({
    apiSpec: spec,
    // allErrors: a problem names every offending parameter and field, not only the first
    validateRequests: { allowUnknownQueryParameters: false, discriminator: true, allErrors: true },
    validateResponses: validateResponses ? { removeAdditional: false } : false,
    validateSecurity: false,
    validateFormats: true,
    ajvFormats: { mode: "full" },
  });
  return [hygiene(contract), ...validator, mergeFailure, failOnEarlyIssues];
}
