/** Shapes of the OAuth routes (api/routes/oauth.ts). No token, secret or code ever appears in them. */
import { z } from 'zod';
import { Instant } from '../json.ts';
import { Environment } from './system.ts';

export const OAuthView = z
  .object({
    status: z
      .enum(['none', 'not_authorized', 'active', 'expired', 'needs_reauthorization'])
      .describe(
        'none: no token fetched yet (client credentials, fetched on first use); not_authorized: the ' +
          'authorization-code flow has not been completed; active / expired: a token is stored; ' +
          'needs_reauthorization: the provider refused the refresh token, authorize again.',
      ),
    expiresAt: Instant.optional(),
    scopes: z.string().optional(),
  })
  .meta({ id: 'OAuthStatus' });

export const OAuthAuthorizeQuery = z.strictObject({
  environment: Environment.optional(),
  returnTo: z
    .string()
    .min(1)
    .max(2048)
    .optional()
    .describe(
      'Where the callback sends the browser when the flow ends: a path of this server (/systems/crm) or a ' +
        "URL of its origin (KUBEGLUE_PUBLIC_URL's), with `oauth=connected` added, or `oauth=failed` and " +
        '`error` (the error code). Anything else is refused (400), so the callback cannot send a user to ' +
        "another site. Without it the callback answers JSON. The dashboard's Connect button uses it.",
    ),
  token: z.string().optional(),
});

export const OAuthAuthorization = z
  .object({
    success: z.literal(true),
    data: z.object({
      authorizationUrl: z.string().describe("The provider's authorization URL to open in a browser."),
      redirectUri: z.string().describe('Where the provider sends the browser back (the callback).'),
      expiresAt: Instant.describe('The state in the URL is valid until then, once.'),
    }),
  })
  .meta({ id: 'OAuthAuthorization' });

export const OAuthCallbackQuery = z.strictObject({
  code: z.string().min(1).max(4096).optional(),
  state: z.string().min(1).max(512).optional(),
  error: z.string().max(256).optional(),
  error_description: z.string().max(1024).optional(),
  error_uri: z.string().optional(),
  iss: z.string().optional(),
  session_state: z.string().optional(),
  scope: z.string().optional(),
});

export const OAuthCallbackResult = z
  .object({
    success: z.literal(true),
    data: z.object({ systemId: z.string(), environment: Environment, oauth: OAuthView }),
  })
  .meta({ id: 'OAuthCallbackResult' });
