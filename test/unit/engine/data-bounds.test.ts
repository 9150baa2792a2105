/**
 * Issue 19, item 6: the engine bounds a step's data (KUBEGLUE_MAX_STEP_DATA_BYTES) and a run's result
 * (KUBEGLUE_MAX_RESULT_BYTES) before anything leaves the worker.
 */
import { describe, expect, it } from 'vitest';
import { Tool } from '../../../contract/api/tool.ts';
import type { JsonValue } from '../../../contract/json.ts';
import { runTool } from '../../../engine/run-tool.ts';
import type { EngineLimits, HttpCall, Protocols } from '../../../engine/types.ts';
import { unsafeTestEvaluate } from '../../support/js-evaluator.ts';

/** Runs a tool whose HTTP steps answer `reply(call)`; answers the result and the URLs called. */
async function run(
  tool: Record<string, unknown>,
  limits: Partial<EngineLimits>,
  reply = (_c: HttpCall): JsonValue => 'ok',
) {
  const calls: string[] = [];
  const protocols: Protocols = {
    async http(call) {
      calls.push(call.url);
      return { status: 200, headers: {}, data: reply(call) };
    },
    postgres: async () => null,
    ftp: async () => null,
    sftp: async () => null,
    redis: async () => null,
    mysql: async () => null,
    smb: async () => null,
  };
  const result = await runTool(
    { evaluate: unsafeTestEvaluate, protocols, limits },
    {
      tool: Tool.parse({ id: 't', ...tool }),
      inputs: {},
      systems: [],
      traceId: 'trace',
      signal: new AbortController().signal,
    },
  );
  return { result, calls };
}

const transform = (id: string, code: string, extra: Record<string, unknown> = {}) => ({
  id,
  ...extra,
  config: { type: 'transform', transformCode: code },
});

/** A string whose JSON text is exactly `bytes` long (the quotes included). */
const ofBytes = (bytes: number) => `() => "${'x'.repeat(bytes - 2)}"`;

describe('step data bound (KUBEGLUE_MAX_STEP_DATA_BYTES)', () => {
  it('fails a step whose data is larger, naming its size, the limit and the setting', async () => {
    const { result } = await run({ steps: [transform('big', ofBytes(2002))] }, { maxStepDataBytes: 1000 });
    expect(result.status).toBe('failed');
    expect(result.error).toBe(
      "Step big failed: the step's data is 2002 bytes of JSON, more than the limit of 1000 bytes " +
        '(KUBEGLUE_MAX_STEP_DATA_BYTES); return less data, or raise KUBEGLUE_MAX_STEP_DATA_BYTES',
    );
    expect(result.data).toBeNull();
    expect(result.stepResults).toEqual([
      { stepId: 'big', success: false, data: null, error: expect.stringContaining('2002 bytes') },
    ]);
  });

  it('names MiB for large data', async () => {
    const { result } = await run(
      { steps: [transform('big', `() => "x".repeat(${3 * 1024 * 1024})`)] },
      { maxStepDataBytes: 1024 * 1024 },
    );
    expect(result.error).toContain(
      'is 3145730 bytes (3.0 MiB) of JSON, more than the limit of 1048576 bytes (1.0 MiB)',
    );
  });

  it('treats an oversized step like any failed step: failureBehavior continue goes on without its data', async () => {
    const { result } = await run(
      {
        steps: [
          transform('big', ofBytes(2002), { failureBehavior: 'continue' }),
          transform('after', '(s) => ({ big: s.big.data, ok: true })'),
        ],
      },
      { maxStepDataBytes: 1000 },
    );
    expect(result.status).toBe('success');
    expect(result.data).toEqual({ big: null, ok: true });
  });

  it('stops a loop once its items’ data passes the bound: no further item starts', async () => {
    const { result, calls } = await run(
      {
        steps: [
          {
            id: 'each',
            dataSelector: '() => [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]',
            config: { url: 'https://x.test/<<currentItem>>' },
          },
        ],
      },
      { maxStepDataBytes: 1000 },
      () => 'y'.repeat(300),
    );
    expect(result.status).toBe('failed');
    // Each envelope is ~350 bytes: the third passes 1000; items 3 to 9 are never requested.
    expect(calls).toEqual(['https://x.test/0', 'https://x.test/1', 'https://x.test/2']);
    expect(result.error).toMatch(
      /^Step each failed: the step's data \(3 of 10 items so far\) is \d+ bytes of JSON, more than the limit of 1000 bytes \(KUBEGLUE_MAX_STEP_DATA_BYTES\)/,
    );
  });

  it('leaves data at the bound alone', async () => {
    const { result } = await run({ steps: [transform('exact', ofBytes(1000))] }, { maxStepDataBytes: 1000 });
    expect(result.status).toBe('success');
    expect(result.data).toBe('x'.repeat(998));
    expect(result.stepResults[0]?.data).toBe('x'.repeat(998));
  });
});

describe('result bound (KUBEGLUE_MAX_RESULT_BYTES)', () => {
  it('fails the run once its steps’ data passes the bound, and keeps none of it', async () => {
    const { result } = await run(
      {
        steps: [transform('a', ofBytes(400)), transform('b', ofBytes(400)), transform('c', ofBytes(400))],
      },
      { maxStepDataBytes: 1000, maxResultBytes: 1000 },
    );
    expect(result.status).toBe('failed');
    expect(result.error).toBe(
      "the data of the run's steps up to c is 1200 bytes of JSON, more than the limit of 1000 bytes " +
        '(KUBEGLUE_MAX_RESULT_BYTES); return less data, or raise KUBEGLUE_MAX_RESULT_BYTES',
    );
    expect(result.data).toBeNull();
    expect(result.stepResults).toEqual([
      { stepId: 'a', success: true },
      { stepId: 'b', success: true },
      { stepId: 'c', success: true },
    ]);
  });

  it('counts the output with the step data: without an outputTransform the last step’s data twice', async () => {
    const { result } = await run(
      { steps: [transform('a', ofBytes(600))] },
      { maxStepDataBytes: 1000, maxResultBytes: 1000 },
    );
    expect(result.status).toBe('failed');
    expect(result.error).toContain(
      "the run's result (its output data, files included, and every step's data) is 1200 bytes of JSON",
    );
    expect(result.stepResults).toEqual([{ stepId: 'a', success: true }]);
  });

  it('counts the files an outputTransform produces', async () => {
    const { result } = await run(
      {
        steps: [transform('a', '() => 1')],
        outputTransform: `() => ({ __files__: { "report.txt": "${'z'.repeat(2000)}" } })`,
      },
      { maxResultBytes: 1000 },
    );
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(
      /^the run's result .* is \d+ bytes of JSON, more than the limit of 1000 bytes/,
    );
    expect(result.files).toEqual([]);
  });

  it('leaves a result at the bound alone', async () => {
    const { result } = await run(
      { steps: [transform('a', ofBytes(500))] },
      { maxStepDataBytes: 1000, maxResultBytes: 1000 },
    );
    expect(result.status).toBe('success');
    expect(result.stepResults[0]?.data).toBe('x'.repeat(498));
  });
});
