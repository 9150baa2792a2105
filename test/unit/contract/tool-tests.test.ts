/**
 * Tool.tests (contract/api/tool-test.ts): bounded in count and size with messages that say the bound,
 * names unique, and described in the generated Tool CRD (what `kubectl explain tool.spec.tests` prints);
 * a run made a test (testFromRun, withTest: what kubeglue test record and POST /v1/tools/{id}/tests share).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { Recording } from '../../../contract/api/recording.ts';
import { Tool } from '../../../contract/api/tool.ts';
import {
  MAX_TOOL_TESTS,
  MAX_TOOL_TESTS_BYTES,
  type ToolTest,
  testFromRun,
  withTest,
} from '../../../contract/api/tool-test.ts';
import { zodIssues } from '../../../contract/format-issues.ts';

const steps = [{ id: 'get', config: { url: 'https://api.example.com/items' } }];
const test = (name: string, data: unknown = [{ id: 1 }]) => ({
  name,
  inputs: {},
  recording: [
    {
      stepId: 'get',
      protocol: 'http',
      page: 1,
      request: { method: 'GET', url: 'https://api.example.com/items', query: [], headers: {} },
      response: { status: 200, data },
    },
  ],
  expect: { output: data },
});

function problems(tests: unknown[]): string {
  const parsed = Tool.safeParse({ id: 't', steps, tests });
  return parsed.success ? '' : JSON.stringify(zodIssues(parsed.error));
}

describe('Tool.tests', () => {
  it('accepts a test with a recording and an expected output or output schema', () => {
    expect(problems([test('a'), { ...test('b'), expect: { outputSchema: { type: 'array' } } }])).toBe('');
  });

  it(`refuses more than ${MAX_TOOL_TESTS} tests, two with one name, and tests larger than the size bound`, () => {
    const many = Array.from({ length: MAX_TOOL_TESTS + 1 }, (_, i) => test(`t${i}`));
    expect(problems(many)).toMatch(/20/);
    expect(problems([test('same'), test('same')])).toContain("duplicate test name 'same'");
    const big = 'x'.repeat(MAX_TOOL_TESTS_BYTES);
    expect(problems([test('big', big)])).toContain(`more than ${MAX_TOOL_TESTS_BYTES}`);
  });

  it('refuses an expect that is neither {output} nor {outputSchema}', () => {
    expect(problems([{ ...test('a'), expect: { equals: 1 } }])).not.toBe('');
  });

  it('is described in the generated Tool CRD, so kubectl explain shows it', () => {
    const crd = parse(
      readFileSync(join(import.meta.dirname, '../../../crds/kubeglue.dev_tools.yaml'), 'utf8'),
    );
    const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    const tests = spec.properties.tests;
    expect(tests.description).toMatch(/Offline tests \(at most 20/);
    expect(tests.maxItems).toBe(MAX_TOOL_TESTS);
    const item = tests.items.properties;
    expect(Object.keys(item)).toEqual(expect.arrayContaining(['name', 'inputs', 'recording', 'expect']));
    expect(item.recording.description).toMatch(/exchanges/);
    expect(item.expect.description).toMatch(/outputSchema/);
  });
});

describe('a run made a test of its tool', () => {
  const recorded = test('r').recording;
  const recording = (truncated: boolean): Recording => ({
    exchanges: recorded.length,
    bytes: 100,
    truncated,
    entries: recorded as Recording['entries'],
  });
  const run = (status: string, truncated = false) => ({
    runId: 'run-1',
    status,
    inputs: { q: 1 },
    output: [{ id: 1 }],
    recording: recording(truncated),
    systems: { crm: 'https://api.example.com' },
  });

  it('keeps the inputs, the recorded exchanges, the systems and the output as what is expected', () => {
    expect(testFromRun(run('success'))).toEqual({
      name: 'run-1',
      inputs: { q: 1 },
      recording: recorded,
      systems: { crm: 'https://api.example.com' },
      expect: { output: [{ id: 1 }] },
    });
    expect(testFromRun(run('success'), 'named')).toMatchObject({ name: 'named' });
  });

  it('refuses a run that did not succeed, and one whose recording the cap cut', () => {
    expect(testFromRun(run('failed'))).toEqual({ refused: 'failed' });
    expect(testFromRun(run('aborted'))).toEqual({ refused: 'aborted' });
    expect(testFromRun(run('running'))).toEqual({ refused: 'running' });
    expect(testFromRun(run('success', true))).toEqual({ refused: 'truncated' });
  });

  it('appends a test, replaces one of its name in place, and says the bound a test would break', () => {
    const [a, b] = [test('a'), test('b')] as ToolTest[];
    expect(withTest([a as ToolTest], b as ToolTest)).toEqual({ tests: [a, b], replaced: false });
    const newA = { ...(a as ToolTest), inputs: { changed: true } };
    expect(withTest([a as ToolTest, b as ToolTest], newA)).toEqual({ tests: [newA, b], replaced: true });
    const full = Array.from({ length: MAX_TOOL_TESTS }, (_, i) => test(`t${i}`) as ToolTest);
    expect(withTest(full, test('one-more') as ToolTest)).toEqual({ bound: 'count', tests: MAX_TOOL_TESTS });
    expect(withTest(full, test('t0', [{ id: 2 }]) as ToolTest)).toMatchObject({ replaced: true });
    const big = test('big', 'x'.repeat(MAX_TOOL_TESTS_BYTES / 2)) as ToolTest;
    const answer = withTest([big], { ...big, name: 'big-2' });
    expect(answer).toMatchObject({ bound: 'bytes' });
    expect((answer as { bytes: number }).bytes).toBeGreaterThan(MAX_TOOL_TESTS_BYTES);
  });
});
