// Shapes the public bundle so that other-language generators take it as it is (the pinned
// @openapitools/openapi-generator-cli 1.0.18-5.0.0-beta2, whose jar is in node_modules). The
// contract keeps its exact validation semantics; the server validates against openapi.yaml,
// never against this file. Two constructs of the contract break that generator:
//  - `null` listed inside an `enum` (how OpenAPI 3.0 spells a nullable enum for strict
//    validators): the python target crashes on it ("Null context for variable 'isString'").
//    `nullable: true` stays, so null is still allowed; only the literal goes.
//  - `oneOf` with a discriminator (the authentication union): the python target folds the
//    variants into one class that demands every variant's required fields and accepts only the
//    last variant's `type`, so reading an endpoint fails. Each such union becomes the object it
//    folds to anyway, stated correctly: every variant's properties, optional, and the
//    discriminator required with all its values.

import { createHmac } from "node:crypto";

export function shapeForGenerators(spec) {
  const out = structuredClone(spec);
  dropNullEnumValues(out);
  const schemas = out.components?.schemas ?? {};
  const deref = (s) => (s.$ref ? schemas[s.$ref.split("/").pop()] : s);
  for (const [name, schema] of Object.entries(schemas)) {
    if (!schema.oneOf || !schema.discriminator) continue;
    const key = schema.discriminator.propertyName;
    const properties = {};
    for (const variant of schema.oneOf.map(deref)) Object.assign(properties, structuredClone(variant.properties));
    const values = Object.keys(schema.discriminator.mapping ?? {});
    properties[key] = { type: "string", enum: values, description: properties[key]?.description, example: values[0] };
    if (properties[key].description === undefined) delete properties[key].description;
    schemas[name] = { type: "object", description: schema.description, required: [key], properties, example: schema.example };
    if (schemas[name].example === undefined) delete schemas[name].example;
  }
  return out;
}

function dropNullEnumValues(node) {
  if (Array.isArray(node)) return node.forEach(dropNullEnumValues);
  if (node && typeof node === "object") {
    if (Array.isArray(node.enum)) node.enum = node.enum.filter((v) => v !== null);
    Object.values(node).forEach(dropNullEnumValues);
  }
}

/**
 * The document the reference page is rendered from: the public bundle with its callbacks lifted
 * into `webhooks` (the page's Webhooks section: its own navigation entry, instead of a collapsed
 * callback titled with a runtime expression at the bottom of the operation that registers it),
 * completed from openapi/webhooks.yaml: the section's introduction, the delivery-status table, a
 * complete example request, signed for real, and a verifying receiver in each language, shown as
 * the webhook's code samples (tabs, highlighted). The document is only rendered, never validated
 * against: `webhooks` is OpenAPI 3.1's key, which the renderer reads in a 3.0 document too.
 */
export function shapeForDocs(spec, receiving) {
  const out = structuredClone(spec);
  const webhooks = {};
  for (const item of Object.values(out.paths ?? {})) {
    for (const op of Object.values(item)) {
      if (!op || typeof op !== "object" || !op.callbacks) continue;
      for (const callback of Object.values(op.callbacks)) {
        for (const expression of Object.values(callback)) {
          for (const [method, cbOp] of Object.entries(expression)) {
            const name = eventTypeOf(out, cbOp);
            webhooks[name] = { [method]: webhookOperation(out, cbOp, receiving, name === "audit.completed") };
          }
        }
      }
      delete op.callbacks;
    }
  }
  if (!Object.keys(webhooks).length) throw new Error("shapeForDocs: the contract has no callback to document as a webhook");
  out.webhooks = webhooks;
  out.tags = [...(out.tags ?? []), { name: "Webhooks", description: receiving.description.trim() }];
  return out;
}

const deref = (spec, node) => (node?.$ref ? node.$ref.split("/").slice(1).reduce((acc, k) => acc[k], spec) : node);

/** The section's title: the event type a callback carries, or its summary when it carries several. */
function eventTypeOf(spec, op) {
  const schema = deref(spec, op.requestBody.content["application/json"].schema);
  const types = deref(spec, schema.properties.type)?.enum ?? [];
  return types.length === 1 ? types[0] : (op.summary ?? op.operationId);
}

/**
 * One webhook of the section. The receivers (which parse `audit.completed`) and the delivery
 * statuses are shown with `audit.completed`; another webhook shows its own signed request and
 * points there for verifying it, which is the same for every body.
 */
function webhookOperation(spec, op, receiving, withReceivers) {
  const ex = receiving.example;
  const schema = deref(spec, op.requestBody.content["application/json"].schema);
  const body = JSON.stringify(schema.example);
  const key = Buffer.from(ex.secret.replace(/^whsec_/, ""), "base64");
  if (key.length < 24) throw new Error("openapi/webhooks.yaml: example.secret must be whsec_ + base64 of the key");
  const signature = createHmac("sha256", key).update(`${ex.id}.${ex.timestamp}.${body}`).digest("base64");
  const request = [
    `curl -X POST '${ex.url}'`,
    `-H 'content-type: application/json'`,
    `-H 'user-agent: ${ex.user_agent}'`,
    `-H 'webhook-id: ${ex.id}'`,
    `-H 'webhook-timestamp: ${ex.timestamp}'`,
    `-H 'webhook-signature: v1,${signature}'`,
    `-d '${body.replace(/'/g, "'\\''")}'`,
  ].join(" \\\n  ");
  const fence = (lang, code) => `\`\`\`${lang}\n${code.trimEnd()}\n\`\`\``;
  const sections = [
    op.description.trimEnd(),
    ...(withReceivers ? [receiving.statuses.trim()] : []),
    `**A complete request**, signed with the secret \`${ex.secret}\` (a receiver accepts it only while its timestamp is within 5 minutes of its clock):`,
    fence("shell", request),
    withReceivers
      ? "**Verifying it**: the code samples beside this section are receivers that check the signature on the raw body, then parse it."
      : "**Verifying it**: exactly as for `audit.completed` (its receivers check the signature on the raw body); then read `type` and `data` as the body's schema says.",
  ];
  if (!withReceivers) return { ...op, tags: ["Webhooks"], description: sections.join("\n\n") };
  // The receivers are the webhook's code samples: one tab per language, highlighted.
  const samples = Object.entries(receiving.receivers).map(([lang, source]) => ({ lang, label: `${lang} receiver`, source: source.trimEnd() }));
  return { ...op, tags: ["Webhooks"], description: sections.join("\n\n"), "x-codeSamples": samples };
}
