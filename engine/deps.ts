import type { EgressPolicy } from './protocols/egress-policy.ts';
import type { GatewayRelayAddress } from './protocols/gateway-socket.ts';
import { createProtocols } from './protocols/index.ts';
import { Sandbox, type SandboxOptions } from './sandbox/sandbox.ts';
import type { EngineDeps, Protocols } from './types.ts';

/**
 * What a role hands the engine: the sandbox's limits, the bounds of a run's data and what steps may
 * connect to (KUBEGLUE_SANDBOX_*, KUBEGLUE_MAX_*_BYTES, KUBEGLUE_EGRESS_*: config/engine.ts).
 */
export interface EngineSettings {
  sandboxMemoryMb: number;
  sandboxTimeoutMs: number;
  /** Sandbox evaluations one API key runs at once (the sandbox keeps one isolate more for other keys). */
  sandboxKeyConcurrency: number;
  maxStepDataBytes: number;
  maxResultBytes: number;
  /** Largest recording of a run (KUBEGLUE_MAX_RECORDING_BYTES). */
  maxRecordingBytes: number;
  egress: EgressPolicy;
}

export interface RealDepsOptions extends EngineSettings {
  /**
   * isolated-vm lost control of an isolate; its thread may stay stuck. Default: a process warning.
   * Pool workers ask to be replaced.
   */
  onCatastrophicError?: ((message: string) => void) | undefined;
  /** The API's gateway relay (pool workers, runner Pods), for steps on private systems. */
  gatewayRelay?: GatewayRelayAddress | undefined;
  /**
   * The calls steps make. Default: the real protocols under the egress policy. `kubeglue test -f`
   * passes protocols that refuse every call (its calls are answered from recordings).
   */
  protocols?: Protocols | undefined;
}

/** The sandbox's options from the settings. */
export function sandboxOptions(
  settings: Pick<EngineSettings, 'sandboxMemoryMb' | 'sandboxTimeoutMs' | 'sandboxKeyConcurrency'>,
): SandboxOptions {
  return {
    memoryLimitMb: settings.sandboxMemoryMb,
    timeoutMs: settings.sandboxTimeoutMs,
    keyConcurrency: settings.sandboxKeyConcurrency,
  };
}

/** The engine wired to the real sandbox and protocols, for workers, the runner Pod and `kubeglue test -f`. */
export function createEngineDeps(options: RealDepsOptions): { deps: EngineDeps; sandbox: Sandbox } {
  const sandbox = new Sandbox({
    ...sandboxOptions(options),
    ...(options.onCatastrophicError ? { onCatastrophicError: options.onCatastrophicError } : {}),
  });
  const deps: EngineDeps = {
    evaluate: (source, args, opts) => sandbox.evaluate(source, args, opts),
    openScope: (owner) => sandbox.openRun(owner),
    limits: {
      maxStepDataBytes: options.maxStepDataBytes,
      maxResultBytes: options.maxResultBytes,
      maxRecordingBytes: options.maxRecordingBytes,
    },
    protocols:
      options.protocols ?? createProtocols({ egress: options.egress, gatewayRelay: options.gatewayRelay }),
  };
  return { deps, sandbox };
}
