/**
 * `GET /.well-known/jwks.json`: the public keys of the identity tokens request steps send
 * (runs/identity/issuer.ts), for the targets that verify them. Public: a verifier holds no kubeglue key.
 */
import type { FastifyInstance } from 'fastify';
import { JWKS_ROUTE } from '../contract/api/routes.ts';
import type { IdentityIssuer } from '../runs/identity/issuer.ts';

/** Verifiers may keep the set this long: well under the time a new key is published before it signs. */
export function jwksMaxAgeSeconds(publishAheadMs: number): number {
  return Math.max(0, Math.min(300, Math.floor(publishAheadMs / 2 / 1000)));
}

export function installJwks(app: FastifyInstance, identity: IdentityIssuer): void {
  app.route({
    method: JWKS_ROUTE.method,
    url: JWKS_ROUTE.path,
    handler: async (_request, reply) => {
      const jwks = await identity.jwks();
      reply.header('cache-control', `public, max-age=${jwksMaxAgeSeconds(identity.publishAheadMs)}`);
      reply.type('application/jwk-set+json');
      return jwks;
    },
  });
}
