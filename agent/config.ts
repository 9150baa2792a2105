/**
 * The agent's YAML configuration (interface "Gateway agent interface"): tunnel_id, server_url, api_key
 * and targets. Validated at start; every error names the key it is about and never repeats the api_key.
 */
import { isIP } from 'node:net';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { formatIssues } from '../contract/format-issues.ts';
import { TargetName, TargetProtocol, TUNNEL_PATH, TunnelId } from '../contract/wire/tunnel.ts';

/** `host:port`, `[v6]:port`; the host is a name or an address in the private network. */
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$/;

const Address = z
  .string()
  .regex(HOST_PORT, 'must be host:port (an IPv6 address in brackets: [fd00::1]:5432)')
  .refine((value) => {
    const port = Number(value.slice(value.lastIndexOf(':') + 1));
    return port >= 1 && port <= 65_535;
  }, 'the port must be 1 to 65535');

const Target = z.union([Address, z.strictObject({ address: Address, protocol: TargetProtocol.optional() })]);

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

const ServerUrl = z.url({ protocol: /^wss?$/, error: 'must be a wss:// URL' }).refine((value) => {
  const url = new URL(value);
  return url.protocol === 'wss:' || LOOPBACK_HOSTS.has(url.hostname);
}, 'must use wss:// (plain ws:// only to localhost, for development)');

export const AgentConfigFile = z.strictObject({
  tunnel_id: TunnelId,
  server_url: ServerUrl,
  api_key: z.string().min(1, 'must not be empty'),
  targets: z
    .record(TargetName, Target)
    .refine((targets) => Object.keys(targets).length > 0, 'must name at least one target')
    .refine((targets) => Object.keys(targets).length <= 256, 'at most 256 targets'),
});

export interface AgentTarget {
  name: string;
  host: string;
  port: number;
  protocol: TargetProtocol;
}

export interface AgentConfig {
  tunnelId: string;
  /** The tunnel endpoint's URL (the tunnel path appended when server_url has none). */
  serverUrl: string;
  apiKey: string;
  targets: Map<string, AgentTarget>;
}

/** The protocol a target speaks when the configuration does not say: guessed from well-known ports. */
const WELL_KNOWN_PORTS: Record<number, TargetProtocol> = {
  21: 'ftp',
  22: 'sftp',
  80: 'http',
  443: 'https',
  445: 'smb',
  990: 'ftps',
  3306: 'mysql',
  5432: 'postgres',
  6379: 'redis',
  8080: 'http',
  8443: 'https',
};

export function inferProtocol(port: number): TargetProtocol {
  return WELL_KNOWN_PORTS[port] ?? 'tcp';
}

function splitAddress(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon);
  return { host: host.startsWith('[') ? host.slice(1, -1) : host, port: Number(address.slice(colon + 1)) };
}

function tunnelUrl(serverUrl: string): string {
  const url = new URL(serverUrl);
  if (url.pathname === '' || url.pathname === '/') url.pathname = TUNNEL_PATH;
  return url.toString();
}

export class AgentConfigError extends Error {
  override name = 'AgentConfigError';
}

/** Parses and validates the YAML text of a configuration file. */
export function parseAgentConfig(text: string, source = 'the configuration'): AgentConfig {
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (error) {
    throw new AgentConfigError(`${source} is not valid YAML: ${(error as Error).message}`);
  }
  const parsed = AgentConfigFile.safeParse(document ?? {});
  if (!parsed.success) throw new AgentConfigError(`${source}: ${formatIssues(parsed.error)}`);
  const targets = new Map<string, AgentTarget>();
  for (const [name, value] of Object.entries(parsed.data.targets)) {
    const spec = typeof value === 'string' ? { address: value } : value;
    const { host, port } = splitAddress(spec.address);
    if (host === '' || (host.includes(':') && isIP(host) !== 6)) {
      throw new AgentConfigError(`${source}: targets.${name}: '${spec.address}' is not host:port`);
    }
    targets.set(name, { name, host, port, protocol: spec.protocol ?? inferProtocol(port) });
  }
  return {
    tunnelId: parsed.data.tunnel_id,
    serverUrl: tunnelUrl(parsed.data.server_url),
    apiKey: parsed.data.api_key,
    targets,
  };
}
