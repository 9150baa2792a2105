/** Errors of incoming webhooks and their challenge verification. */
import { type CatalogEntry, errorArea } from './define.ts';

const { define, entries } = errorArea();

export const KG_ERR_WEBHOOK_BODY_INVALID = define(
  'KG_ERR_WEBHOOK_BODY_INVALID',
  400,
  () => 'The webhook body is not valid JSON',
  'Send a JSON body with Content-Type: application/json, or a form body.',
);
export const KG_ERR_NO_CHALLENGE = define(
  'KG_ERR_NO_CHALLENGE',
  400,
  () =>
    'No challenge to answer: expected hub.mode=subscribe with hub.challenge, validationToken or challenge',
  'GET /v1/hooks/{id} only answers challenges (hub.mode=subscribe with hub.challenge, validationToken, or challenge); POST runs the tool.',
);

/** This area's codes in the order declared here (errors.ts puts the areas together into the catalog). */
export const HOOK_ERRORS: readonly CatalogEntry[] = entries;
