import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import {
  KG_ERR_DOCUMENTATION_EMPTY,
  KG_ERR_DOCUMENTATION_NOT_FOUND,
  KG_ERR_DOCUMENTATION_NOT_READY,
} from '../../contract/api/errors.ts';
import { ROUTES } from '../../contract/api/routes.ts';
import { summaryToText } from '../../systems/documentation/parsers/render.ts';
import type { DocumentationService } from '../../systems/documentation/service.ts';
import type { SystemService } from '../../systems/service.ts';
import { assertSystemAccess } from '../auth.ts';
import { parseInput } from '../validation.ts';

const SystemParams = z.object({ systemId: z.string().min(1) });
const UploadQuery = z.object({
  environment: z.enum(['dev', 'prod']).optional(),
  filename: z.string().optional(),
});
const ReadQuery = z.object({
  environment: z.enum(['dev', 'prod']).optional(),
  format: z.enum(['json', 'text']).optional(),
});

function queryOf(operationId: string): z.ZodType {
  const query = ROUTES.find((route) => route.operationId === operationId)?.query;
  if (!query) throw new Error(`route table has no query schema for ${operationId}`);
  return query;
}

/** `filename="…"` of a Content-Disposition header. */
function dispositionName(header: string | undefined): string | undefined {
  const match = header ? /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(header) : null;
  return match?.[1] ? decodeURIComponent(match[1]) : undefined;
}

/**
 * PUT /v1/systems/:systemId/documentation (the file as the body, any content type, at most
 * KUBEGLUE_DOCS_MAX_BYTES) and GET …/documentation[?format=text]. Like every systems route, a system
 * outside the key's systemIds answers 404.
 */
export function registerDocumentationRoutes(
  app: FastifyInstance,
  deps: { systems: SystemService; documentation: DocumentationService },
): void {
  const { systems, documentation } = deps;
  const uploadQuery = queryOf('uploadSystemDocumentation');
  const readQuery = queryOf('getSystemDocumentation');
  const bodyLimit = documentation.limits.maxBytes;

  app.register(async (scope) => {
    // Whatever the content type says, the body is the file: kept as bytes, detected by content.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_request, body, done) =>
      done(null, body),
    );
    const config = { bodyLimitSetting: 'KUBEGLUE_DOCS_MAX_BYTES' };
    scope.put('/v1/systems/:systemId/documentation', { bodyLimit, config }, async (request, reply) => {
      const { systemId } = parseInput(SystemParams, request.params, 'path');
      const query = UploadQuery.parse(parseInput(uploadQuery, request.query, 'query'));
      assertSystemAccess(request, systemId, query.environment);
      const system = await systems.get(systemId, query.environment);
      const body = request.body;
      if (!Buffer.isBuffer(body) || body.length === 0) throw KG_ERR_DOCUMENTATION_EMPTY();
      const state = await documentation.upload(system, {
        bytes: new Uint8Array(body),
        contentType: request.headers['content-type'],
        fileName: query.filename ?? dispositionName(request.headers['content-disposition']),
      });
      return reply.status(202).send({ success: true, data: state });
    });
  });

  app.get('/v1/systems/:systemId/documentation', async (request, reply) => {
    const { systemId } = parseInput(SystemParams, request.params, 'path');
    const query = ReadQuery.parse(parseInput(readQuery, request.query, 'query'));
    assertSystemAccess(request, systemId, query.environment);
    const system = await systems.get(systemId, query.environment);
    const key = { systemId: system.id, environment: system.environment };
    const state = await documentation.state(key);
    if (!state) throw KG_ERR_DOCUMENTATION_NOT_FOUND(systemId);
    const summary = await documentation.summary(key);
    if (query.format === 'text') {
      if (!summary) throw KG_ERR_DOCUMENTATION_NOT_READY(systemId, state.status, state.error);
      return reply.type('text/plain; charset=utf-8').send(summaryToText(summary));
    }
    const { status, source, requestedAt, fetchedAt, error } = state;
    return {
      success: true,
      data: {
        state: {
          status,
          source,
          requestedAt,
          ...(fetchedAt ? { fetchedAt } : {}),
          ...(error ? { error } : {}),
        },
        summary: summary ?? null,
      },
    };
  });
}
