/**
 * Where an API key goes when the system's credentials do not say (no apiKeyHeader / apiKeyQueryParam): the
 * documentation's security schemes decide. Pure.
 */
import type { ApiKeyPlacement } from '../../../contract/api/system.ts';
import type { DocumentationSummary, OpenApiDocument, SecurityScheme } from './summary.ts';

/** A placement and the scheme that decided it (`<document source>#<scheme id>`). */
export interface DocumentedPlacement {
  placement: ApiKeyPlacement;
  source: string;
}

function placementOf(scheme: SecurityScheme): ApiKeyPlacement | undefined {
  if (scheme.type === 'apiKey' && scheme.name) {
    if (scheme.in === 'header' || scheme.in === 'query' || scheme.in === 'cookie') {
      return { in: scheme.in, name: scheme.name };
    }
    return undefined;
  }
  if (scheme.type === 'http' && scheme.scheme === 'bearer') {
    return { in: 'header', name: 'Authorization', prefix: 'Bearer ' };
  }
  return undefined;
}

/**
 * The first usable scheme, in this order: an apiKey scheme the document-wide security requirement names, any
 * apiKey scheme, a bearer scheme the requirement names, any bearer scheme. OpenAPI documents are asked in
 * the order they were found; other schemes (oauth2, basic) decide nothing.
 */
export function documentedApiKeyPlacement(summary: DocumentationSummary): DocumentedPlacement | undefined {
  const documents = summary.documents.filter((doc): doc is OpenApiDocument => doc.kind === 'openapi');
  const passes: Array<(doc: OpenApiDocument, scheme: SecurityScheme) => boolean> = [
    (doc, scheme) => scheme.type === 'apiKey' && doc.security.includes(scheme.id),
    (_doc, scheme) => scheme.type === 'apiKey',
    (doc, scheme) => scheme.type === 'http' && doc.security.includes(scheme.id),
    (_doc, scheme) => scheme.type === 'http',
  ];
  for (const pass of passes) {
    for (const doc of documents) {
      for (const scheme of doc.securitySchemes) {
        if (!pass(doc, scheme)) continue;
        const placement = placementOf(scheme);
        if (placement) return { placement, source: `${doc.source}#securitySchemes/${scheme.id}` };
      }
    }
  }
  return undefined;
}
