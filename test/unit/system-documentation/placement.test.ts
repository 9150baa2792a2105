import { describe, expect, it } from 'vitest';
import type { ResolvedSystem } from '../../../contract/wire/run-order.ts';
import { applySystemAuth } from '../../../engine/system-auth.ts';
import { documentedApiKeyPlacement } from '../../../systems/documentation/parsers/placement.ts';
import type {
  DocumentationSummary,
  OpenApiDocument,
} from '../../../systems/documentation/parsers/summary.ts';

function summaryWith(doc: Partial<OpenApiDocument>): DocumentationSummary {
  const base: OpenApiDocument = {
    kind: 'openapi',
    source: 'https://docs.example/openapi.yaml',
    specVersion: '3.1.0',
    servers: [],
    securitySchemes: [],
    security: [],
    operations: [],
  };
  return { documents: [{ ...base, ...doc }], skipped: [], truncated: false };
}

describe('the documented API-key placement', () => {
  it('prefers the apiKey scheme the document-wide requirement names', () => {
    const decided = documentedApiKeyPlacement(
      summaryWith({
        securitySchemes: [
          { id: 'bearer', type: 'http', scheme: 'bearer' },
          { id: 'header', type: 'apiKey', in: 'header', name: 'X-Other' },
          { id: 'session', type: 'apiKey', in: 'cookie', name: 'sid' },
        ],
        security: ['session'],
      }),
    );
    expect(decided).toEqual({
      placement: { in: 'cookie', name: 'sid' },
      source: 'https://docs.example/openapi.yaml#securitySchemes/session',
    });
  });

  it('means Authorization: Bearer for an http bearer scheme, and nothing for oauth2 or basic', () => {
    expect(
      documentedApiKeyPlacement(
        summaryWith({ securitySchemes: [{ id: 'b', type: 'http', scheme: 'bearer' }] }),
      )?.placement,
    ).toEqual({ in: 'header', name: 'Authorization', prefix: 'Bearer ' });
    expect(
      documentedApiKeyPlacement(
        summaryWith({
          securitySchemes: [
            { id: 'o', type: 'oauth2' },
            { id: 'basic', type: 'http', scheme: 'basic' },
          ],
        }),
      ),
    ).toBeUndefined();
  });
});

describe('a request step of an apiKey system with a documented placement', () => {
  const system = (placement: ResolvedSystem['apiKeyPlacement']): ResolvedSystem => ({
    id: 'api',
    authType: 'apiKey',
    credentials: {},
    apiKeyPlacement: placement,
  });

  it('sends the key as a cookie, after cookies the step sets', () => {
    const headers: Record<string, string> = { cookie: 'theme=dark' };
    const carriers = applySystemAuth(system({ in: 'cookie', name: 'sid' }), { apiKey: 'k1' }, headers, []);
    expect(headers).toEqual({ cookie: 'theme=dark; sid=k1' });
    expect(carriers.headers).toEqual(['cookie']);
  });

  it('lets explicit credentials and the step itself win over the documentation', () => {
    const headers: Record<string, string> = {};
    applySystemAuth(
      system({ in: 'query', name: 'key' }),
      { apiKey: 'k1', apiKeyHeader: 'X-Key' },
      headers,
      [],
    );
    expect(headers).toEqual({ 'X-Key': 'k1' });
    const query: Array<[string, string]> = [['key', 'from-step']];
    const carriers = applySystemAuth(system({ in: 'query', name: 'key' }), { apiKey: 'k1' }, {}, query);
    expect(query).toEqual([['key', 'from-step']]);
    expect(carriers.query).toEqual([]);
  });
});
