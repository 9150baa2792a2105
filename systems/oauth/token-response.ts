/**
 * Token endpoint answers, parsed per RFC 6749 §5.1 (success) and §5.2 (error). Providers answer JSON as
 * the RFC says, and some (GitHub's classic endpoint among them) answer form-encoded: both are read. Pure.
 */

export interface TokenGrant {
  accessToken: string;
  tokenType: string;
  /** Seconds, when the provider gave a lifetime. */
  expiresIn?: number;
  refreshToken?: string;
  /** The granted scopes when the provider says (RFC 6749 §3.3: absent means as requested). */
  scope?: string;
}

export type TokenAnswer =
  | { ok: true; grant: TokenGrant }
  /** `error` is the RFC's code (invalid_grant, invalid_client…); description is the provider's text. */
  | { ok: false; error: string; description?: string };

function fields(body: string, contentType: string | undefined): Record<string, unknown> | undefined {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  const text = body.trim();
  if (type === 'application/json' || type.endsWith('+json') || text.startsWith('{')) {
    try {
      const value: unknown = JSON.parse(text);
      return value !== null && typeof value === 'object' && !Array.isArray(value)
        ? (value as Record<string, unknown>)
        : undefined;
    } catch {
      return undefined;
    }
  }
  if (type === 'application/x-www-form-urlencoded' || type === 'text/plain' || /^[\w.-]+=/.test(text)) {
    return Object.fromEntries(new URLSearchParams(text));
  }
  return undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** expires_in is a number in JSON and a string in form-encoded answers; anything else is ignored. */
function seconds(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

/**
 * Reads an answer of the token endpoint. Messages built from it never contain a token: only the RFC's
 * error code and the provider's description (which carries none).
 */
export function parseTokenAnswer(status: number, contentType: string | undefined, body: string): TokenAnswer {
  const data = fields(body, contentType);
  const error = text(data?.error);
  if (error) {
    const description = text(data?.error_description);
    return { ok: false, error, ...(description ? { description: description.slice(0, 300) } : {}) };
  }
  if (status < 200 || status >= 300) {
    return { ok: false, error: 'http_error', description: `the token endpoint answered HTTP ${status}` };
  }
  const accessToken = text(data?.access_token);
  if (!data || !accessToken) {
    return {
      ok: false,
      error: 'invalid_response',
      description: 'the token endpoint answer has no access_token (neither JSON nor form-encoded)',
    };
  }
  // RFC 6749 makes token_type required; a missing one is read as Bearer, which is what every provider means.
  const tokenType = text(data.token_type) ?? 'Bearer';
  if (tokenType.toLowerCase() !== 'bearer') {
    return {
      ok: false,
      error: 'unsupported_token_type',
      description: `token_type ${tokenType.slice(0, 40)} is not supported (only Bearer)`,
    };
  }
  const expiresIn = seconds(data.expires_in);
  const refreshToken = text(data.refresh_token);
  const scope = text(data.scope);
  return {
    ok: true,
    grant: {
      accessToken,
      tokenType: 'Bearer',
      ...(expiresIn !== undefined ? { expiresIn } : {}),
      ...(refreshToken ? { refreshToken } : {}),
      ...(scope ? { scope } : {}),
    },
  };
}
