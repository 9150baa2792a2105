/**
 * What a gateway agent's target speaks: the agent advertises it with the target's name (tunnel.ts) and
 * the API lists it with the gateway (api/bodies.ts). Apart from tunnel.ts so that the dashboard's types,
 * which read the API's bodies, do not reach the tunnel's frame codec (Node's Buffer).
 */
import { z } from 'zod';

export const TargetProtocol = z.enum([
  'http',
  'https',
  'postgres',
  'ftp',
  'ftps',
  'sftp',
  'redis',
  'mysql',
  'smb',
  'tcp',
]);
export type TargetProtocol = z.infer<typeof TargetProtocol>;
