import { resolve } from 'node:path';
import { z } from 'zod';
import { formatIssues } from '../crds/errors.ts';

const port = z.coerce.number().int().min(0).max(65_535);
const positiveInt = z.coerce.number().int().positive();

/** Every knob of the server, read from `KUBEGLUE_*` environment variables (documented in the README). */
export const ServerConfig = z.object({
  KUBEGLUE_HOST: z.string().min(1).default('127.0.0.1'),
  KUBEGLUE_PORT: port.default(8080),
  KUBEGLUE_DATA_DIR: z.string().min(1).default('./.kubeglue'),
  KUBEGLUE_DATABASE_URL: z.string().url().optional(),
  KUBEGLUE_BODY_LIMIT_BYTES: positiveInt.default(10 * 1024 * 1024),
  KUBEGLUE_WORKERS: positiveInt.optional(),
  KUBEGLUE_SANDBOX_MEMORY_MB: positiveInt.default(128),
  KUBEGLUE_SANDBOX_TIMEOUT_MS: positiveInt.default(10_000),
  KUBEGLUE_SHUTDOWN_GRACE_MS: positiveInt.default(10_000),
  KUBEGLUE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl: string | undefined;
  bodyLimitBytes: number;
  workers: number | undefined;
  sandboxMemoryMb: number;
  sandboxTimeoutMs: number;
  shutdownGraceMs: number;
  logLevel: string;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = ServerConfig.safeParse(env);
  if (!parsed.success) throw new Error(`invalid configuration: ${formatIssues(parsed.error)}`);
  const c = parsed.data;
  return {
    host: c.KUBEGLUE_HOST,
    port: c.KUBEGLUE_PORT,
    dataDir: resolve(c.KUBEGLUE_DATA_DIR),
    databaseUrl: c.KUBEGLUE_DATABASE_URL,
    bodyLimitBytes: c.KUBEGLUE_BODY_LIMIT_BYTES,
    workers: c.KUBEGLUE_WORKERS,
    sandboxMemoryMb: c.KUBEGLUE_SANDBOX_MEMORY_MB,
    sandboxTimeoutMs: c.KUBEGLUE_SANDBOX_TIMEOUT_MS,
    shutdownGraceMs: c.KUBEGLUE_SHUTDOWN_GRACE_MS,
    logLevel: c.KUBEGLUE_LOG_LEVEL,
  };
}
