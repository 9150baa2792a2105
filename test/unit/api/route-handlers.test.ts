/**
 * Issue 20, item 3: every operation of the route table has exactly one handler; a server whose handlers
 * miss one, or handle one the table does not know, does not start.
 */
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { combineHandlers, type Handlers, registerRoutes } from '../../../api/routes/register.ts';
import { ROUTES } from '../../../contract/api/routes.ts';

/** A handler for every operation that answers with its operationId. */
function everyOperation(): Record<string, (() => Promise<unknown>) | null> {
  return Object.fromEntries(ROUTES.map((route) => [route.operationId, async () => route.operationId]));
}

describe('the handlers of the route table', () => {
  it('route each operation to its own handler', async () => {
    const app = Fastify();
    registerRoutes(app, everyOperation() as unknown as Handlers);
    expect((await app.inject({ method: 'GET', url: '/v1/runs/r1' })).body).toBe('getRun');
    expect((await app.inject({ method: 'GET', url: '/v1/runs/r1/files' })).body).toBe('listRunFiles');
    expect((await app.inject({ method: 'POST', url: '/v1/tools/x/run' })).body).toBe('runTool');
    expect((await app.inject({ method: 'PATCH', url: '/v1/systems/x' })).body).toBe('patchSystem');
  });

  it('refuse a table entry without a handler', () => {
    const { getRun: _, ...handlers } = everyOperation();
    expect(() => registerRoutes(Fastify(), handlers as unknown as Handlers)).toThrow('no handler for getRun');
  });

  it('refuse a handler without a table entry', () => {
    const handlers = { ...everyOperation(), getRunLogs: async () => 'logs' };
    expect(() => registerRoutes(Fastify(), handlers as unknown as Handlers)).toThrow(
      'no route for getRunLogs',
    );
  });

  it('refuse an operation handled twice', () => {
    const handle = async () => 'me';
    expect(() => combineHandlers({ getMe: handle }, { getMe: handle })).toThrow(
      'operation getMe has two handlers',
    );
  });

  it('leave out the operations a server does not offer (null), so their paths answer 404', async () => {
    const app = Fastify();
    registerRoutes(app, { ...everyOperation(), listGateways: null } as unknown as Handlers);
    expect((await app.inject({ method: 'GET', url: '/v1/gateways' })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/v1/gateways/g1' })).body).toBe('getGateway');
  });
});
