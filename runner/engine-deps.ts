import type { EngineDeps } from './engine/types.ts';
import { createProtocols } from './protocols/index.ts';
import { Sandbox } from './sandbox/sandbox.ts';

export interface RealDepsOptions {
  sandboxMemoryMb?: number;
  sandboxTimeoutMs?: number;
}

/** The engine wired to the real sandbox and protocols, for workers and the runner Pod. */
export function createEngineDeps(options: RealDepsOptions = {}): { deps: EngineDeps; sandbox: Sandbox } {
  const sandbox = new Sandbox({
    ...(options.sandboxMemoryMb ? { memoryLimitMb: options.sandboxMemoryMb } : {}),
    ...(options.sandboxTimeoutMs ? { timeoutMs: options.sandboxTimeoutMs } : {}),
  });
  const deps: EngineDeps = {
    evaluate: (source, args, opts) => sandbox.evaluate(source, args, opts),
    protocols: createProtocols(),
  };
  return { deps, sandbox };
}
