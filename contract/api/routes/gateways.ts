/** The Gateways routes: the connected gateway agents, and releasing a tunnel id from its owner. */
import { DeleteResult, Gateway, GatewayList } from '../bodies.ts';
import { adminOnly, failure, notFound, restricted } from './shared.ts';
import type { RouteSpec } from './spec.ts';

/** The Gateways operations. */
export const GATEWAY_ROUTES = [
  {
    method: 'GET',
    path: '/gateways',
    operationId: 'listGateways',
    summary: 'Connected gateway agents: targets, connected since, streams, bytes',
    tag: 'Gateways',
    scopes: ['systems:read'],
    responses: { 200: { description: 'Connected gateways', schema: GatewayList }, 403: restricted },
  },
  {
    method: 'GET',
    path: '/gateways/{tunnelId}',
    operationId: 'getGateway',
    summary: 'One connected gateway agent',
    tag: 'Gateways',
    scopes: ['systems:read'],
    responses: { 200: { description: 'The gateway', schema: Gateway }, 403: restricted, 404: notFound },
  },
  {
    method: 'DELETE',
    path: '/gateways/{tunnelId}/owner',
    operationId: 'releaseGatewayOwner',
    summary:
      'Release a tunnel id from the API key that owns it, so an agent with another key may register it (admin)',
    tag: 'Gateways',
    scopes: ['keys:admin'],
    responses: {
      200: {
        description: 'Released; a connected agent stays connected until another registers',
        schema: DeleteResult,
      },
      403: adminOnly,
      404: failure('No API key owns this tunnel id'),
    },
  },
] as const satisfies readonly RouteSpec[];
