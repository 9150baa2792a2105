/**
 * The real engine (isolated-vm sandbox, undici, pg, basic-ftp, ssh2) under a chosen egress policy, for
 * the security-engine-* tests. One sandbox per test file, one sandbox context per run (as in
 * production); protocols are built per policy.
 */

import { defaultEngineSettings } from '../../config/config.ts';
import type { RuntimeCredentials } from '../../contract/api/run.ts';
import { Tool, type ToolInput } from '../../contract/api/tool.ts';
import type { JsonObject } from '../../contract/json.ts';
import type { ResolvedSystem } from '../../contract/wire/run-order.ts';
import { sandboxOptions } from '../../engine/deps.ts';
import { type EgressPolicy, PERMISSIVE_EGRESS } from '../../engine/protocols/egress-policy.ts';
import type { ResolveAll } from '../../engine/protocols/egress-socket.ts';
import { closeHttpAgent } from '../../engine/protocols/http.ts';
import { closeConnectionPools, createProtocols } from '../../engine/protocols/index.ts';
import { runTool } from '../../engine/run-tool.ts';
import { Sandbox } from '../../engine/sandbox/sandbox.ts';
import type { EngineEvent, EngineResult } from '../../engine/types.ts';
import { useStarted } from './fixture.ts';

export interface EngineRunOptions {
  inputs?: JsonObject;
  systems?: ResolvedSystem[];
  runtimeCredentials?: RuntimeCredentials;
  egress?: EgressPolicy;
  /** Fakes DNS answers for HTTP steps. */
  resolve?: ResolveAll;
  timeoutMs?: number;
  events?: EngineEvent[];
}

export interface TestEngine {
  run(tool: Omit<ToolInput, 'id'>, options?: EngineRunOptions): Promise<EngineResult>;
  close(): Promise<void>;
}

/** A test engine for the tests of the enclosing block, closed after them. */
export function useTestEngine(): TestEngine {
  return useStarted(startTestEngine, (engine) => engine.close());
}

export function startTestEngine(): TestEngine {
  const sandbox = new Sandbox(sandboxOptions(defaultEngineSettings()));
  return {
    run(tool, options = {}) {
      const protocols = createProtocols({
        egress: options.egress ?? PERMISSIVE_EGRESS,
        ...(options.resolve ? { http: { resolve: options.resolve } } : {}),
      });
      return runTool(
        {
          evaluate: (source, args, opts) => sandbox.evaluate(source, args, opts),
          // One sandbox context per run, as in production (engine/deps.ts).
          openScope: () => sandbox.openRun(),
          protocols,
        },
        {
          tool: Tool.parse({ id: 'security-engine-test', ...tool }),
          inputs: options.inputs ?? {},
          systems: options.systems ?? [],
          runtimeCredentials: options.runtimeCredentials,
          timeoutMs: options.timeoutMs ?? 15_000,
          traceId: 'security-engine-test',
          signal: new AbortController().signal,
          onEvent: options.events ? (event) => options.events?.push(event) : undefined,
        },
      );
    },
    async close() {
      sandbox.dispose();
      await Promise.allSettled([closeHttpAgent(), closeConnectionPools()]);
    },
  };
}

export const DENY_PRIVATE: EgressPolicy = { privateDefault: 'deny', allow: [], deny: [] };

/** A transform step. */
export function transform(id: string, transformCode: string): ToolInput['steps'][number] {
  return { id, config: { type: 'transform', transformCode } };
}
