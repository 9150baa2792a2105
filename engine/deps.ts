import type { EgressPolicy } from './protocols/egress-policy.ts';
import type { GatewayRelayAddress } from './protocols/gateway-socket.ts';
import { createProtocols } from './protocols/index.ts';
import { Sandbox } from './sandbox/sandbox.ts';
import type { EngineDeps, EngineLimits } from './types.ts';

export interface RealDepsOptions {
  sandboxMemoryMb?: number | undefined;
  sandboxTimeoutMs?: number | undefined;
  /** Sandbox evaluations one API key runs at once (the sandbox keeps one isolate more for other keys). */
  sandboxKeyConcurrency?: number | undefined;
  /** The step data and result bounds (default: DEFAULT_LIMITS). */
  limits?: Partial<Pick<EngineLimits, 'maxStepDataBytes' | 'maxResultBytes'>> | undefined;
  /**
   * isolated-vm lost control of an isolate; its thread may stay stuck. Default: a process warning.
   * Pool workers ask to be replaced.
   */
  onCatastrophicError?: ((message: string) => void) | undefined;
  /** What steps may connect to; default: everything but the cloud metadata addresses. */
  egress?: EgressPolicy | undefined;
  /** The API's gateway relay (pool workers, runner Pods), for steps on private systems. */
  gatewayRelay?: GatewayRelayAddress | undefined;
}

function definedOnly<T extends object>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/** The engine wired to the real sandbox and protocols, for workers and the runner Pod. */
export function createEngineDeps(options: RealDepsOptions = {}): { deps: EngineDeps; sandbox: Sandbox } {
  const sandbox = new Sandbox({
    ...(options.sandboxMemoryMb ? { memoryLimitMb: options.sandboxMemoryMb } : {}),
    ...(options.sandboxTimeoutMs ? { timeoutMs: options.sandboxTimeoutMs } : {}),
    ...(options.sandboxKeyConcurrency ? { keyConcurrency: options.sandboxKeyConcurrency } : {}),
    ...(options.onCatastrophicError ? { onCatastrophicError: options.onCatastrophicError } : {}),
  });
  const deps: EngineDeps = {
    evaluate: (source, args, opts) => sandbox.evaluate(source, args, opts),
    openScope: (owner) => sandbox.openRun(owner),
    ...(options.limits ? { limits: definedOnly(options.limits) } : {}),
    protocols: createProtocols({
      ...(options.egress ? { egress: options.egress } : {}),
      gatewayRelay: options.gatewayRelay,
    }),
  };
  return { deps, sandbox };
}
