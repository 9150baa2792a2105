/** The Hooks routes: an incoming webhook, and its challenge verification. */
import { z } from 'zod';
import { ExecutionMode, WebhookAccepted } from '../run.ts';
import { failure, lenientParameter, notFound } from './shared.ts';
import type { RouteSpec } from './spec.ts';

/** The Hooks operations. */
export const HOOK_ROUTES = [
  {
    method: 'POST',
    path: '/hooks/{toolId}',
    operationId: 'triggerHook',
    summary: 'Incoming webhook',
    tag: 'Hooks',
    scopes: ['runs:execute'],
    query: z.looseObject({
      token: lenientParameter,
      mode: ExecutionMode.optional(),
      validationToken: z.string().optional(),
    }),
    // Any body: the tool gets it parsed (JSON, form) and raw (api/routes/hooks.ts).
    body: { schema: z.unknown(), name: 'webhook body' },
    bodyContentTypes: ['application/x-www-form-urlencoded', 'text/plain'],
    responses: {
      200: { description: 'Challenge echoed; the tool did not run' },
      202: { description: 'Accepted; the tool runs asynchronously', schema: WebhookAccepted },
      400: failure('Archived tool or bad body'),
      404: notFound,
    },
  },
  {
    method: 'GET',
    path: '/hooks/{toolId}',
    operationId: 'verifyHook',
    summary: 'Webhook challenge verification',
    tag: 'Hooks',
    scopes: ['runs:execute'],
    query: z.looseObject({
      token: lenientParameter,
      'hub.mode': lenientParameter,
      'hub.challenge': lenientParameter,
      validationToken: lenientParameter,
      challenge: lenientParameter,
    }),
    responses: {
      200: { description: 'The challenge, as plain text', contentType: 'text/plain' },
      400: failure('No recognised challenge'),
      404: notFound,
    },
  },
] as const satisfies readonly RouteSpec[];
