import { SETTINGS } from '../../config/config.ts';
import {
  KG_ERR_DOCUMENTATION_EMPTY,
  KG_ERR_DOCUMENTATION_NOT_FOUND,
  KG_ERR_DOCUMENTATION_NOT_READY,
} from '../../contract/api/errors.ts';
import { summaryToText } from '../../systems/documentation/parsers/render.ts';
import { noMatch, renderResults, staleNote } from '../../systems/documentation/search/render.ts';
import type { DocumentationService } from '../../systems/documentation/service.ts';
import type { SystemService } from '../../systems/service.ts';
import { assertSystemAccess } from '../auth.ts';
import type { HandlersOf } from './register.ts';

/** `filename="…"` of a Content-Disposition header. */
function dispositionName(header: string | undefined): string | undefined {
  const match = header ? /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(header) : null;
  return match?.[1] ? decodeURIComponent(match[1]) : undefined;
}

/**
 * PUT /v1/systems/:systemId/documentation (the file as the body, any content type, at most
 * KUBEGLUE_DOCS_MAX_BYTES), GET …/documentation[?format=text] and POST …/documentation/search. Like every
 * systems route, a system outside the key's systemIds answers 404.
 */
export function documentationHandlers(deps: {
  systems: SystemService;
  documentation: DocumentationService;
}): HandlersOf<'uploadSystemDocumentation' | 'getSystemDocumentation' | 'searchSystemDocumentation'> {
  const { systems, documentation } = deps;
  return {
    uploadSystemDocumentation: {
      // Whatever the content type says, the body is the file: kept as bytes, detected by content.
      body: {
        as: 'buffer',
        limit: { bytes: documentation.limits.maxBytes, setting: SETTINGS.tree.documentation.maxBytes.name },
      },
      handle: async ({ params: { systemId }, query }, request, reply) => {
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
      },
    },

    getSystemDocumentation: async ({ params: { systemId }, query }, request, reply) => {
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
      return { success: true, data: { state: documentation.publicState(state), summary: summary ?? null } };
    },

    searchSystemDocumentation: {
      // Before the body is checked: a system outside the key's grant answers 404 whatever the body.
      authorize: ({ params, query }, request) =>
        assertSystemAccess(request, params.systemId, query.environment),
      handle: async ({ params: { systemId }, query, body: { keywords, limit } }) => {
        const system = await systems.get(systemId, query.environment);
        const key = { systemId: system.id, environment: system.environment };
        const outcome = await documentation.search(key, keywords, limit);
        if (outcome.kind === 'none') {
          // An empty `data` is what superglue's CLI reports as "No documentation found for this system".
          const { message } = KG_ERR_DOCUMENTATION_NOT_FOUND(systemId);
          return { success: true, data: '', results: [], total: 0, limit, message };
        }
        if (outcome.kind === 'not-ready') {
          throw KG_ERR_DOCUMENTATION_NOT_READY(systemId, outcome.state.status, outcome.state.error);
        }
        const note = staleNote(outcome.state);
        const empty = outcome.results.length === 0 ? noMatch(keywords, outcome.sections) : undefined;
        const message = [empty, note].filter(Boolean).join(' ');
        return {
          success: true,
          data: renderResults(keywords, outcome, note),
          results: outcome.results,
          total: outcome.total,
          limit,
          documentation: documentation.publicState(outcome.state),
          ...(message ? { message } : {}),
        };
      },
    },
  };
}
