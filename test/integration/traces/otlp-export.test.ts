/**
 * Traces exported to a real OTLP/HTTP receiver (test/support/otlp-receiver.ts: the official OTLP
 * definitions decode what the SDK sent), in both protocols: the run's span linked to the caller's
 * `traceparent`, a child span per step, per page and per loop item, the ids the target saw in its
 * `traceparent` being exported spans, and nothing of the inputs or credentials in any span. A sync run in
 * the api process, an async run in the embedded worker pool, and a run in a runner Pod process.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../../config/config.ts';
import type { JsonObject } from '../../../contract/json.ts';
import { w3cTraceId } from '../../../engine/protocols/traceparent.ts';
import { openTraceExport, type TraceExport } from '../../../platform/traces.ts';
import { parentSpanOption } from '../../../runs/execution/index.ts';
import { callOk, type TestApi, useTestApi, waitForRun } from '../../support/embedded.ts';
import { type HttpTarget, useHttpTarget } from '../../support/http-target.ts';
import { createInternalApi } from '../../support/internal-api.ts';
import { type ReceivedSpan, useOtlpReceiver } from '../../support/otlp-receiver.ts';
import { startRunnerProcess } from '../../support/runner-process.ts';
import { openTestStore } from '../../support/store.ts';

const CREDENTIAL = 'crm-token-SECRET-7d1e';
const INPUT_SECRET = 'input-value-PRIVATE-42aa';
const CALLER_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CALLER_SPAN = 'b7ad6b7169203331';

/** Three pages of items (pageBased, 2 a page), and an echo per loop item. */
function routeTarget(target: HttpTarget): void {
  const rows = [1, 2, 3, 4, 5].map((id) => ({ id }));
  target.route('GET', '/items', (req) => {
    const page = Number(new URLSearchParams(req.url.split('?')[1]).get('page') ?? 1);
    return { body: rows.slice((page - 1) * 2, page * 2) };
  });
  target.route('GET', '/detail', (req) => ({ body: { query: req.url } }));
}

const TOOL: JsonObject = {
  id: 'traced',
  inputSchema: { type: 'object', properties: { note: { type: 'string' } } },
  steps: [
    {
      id: 'list',
      config: {
        systemId: 'crm',
        url: '/items',
        queryParams: { page: '<<page>>', note: '<<note>>' },
        pagination: { type: 'pageBased', pageSize: 2 },
      },
    },
    {
      id: 'each',
      dataSelector: '(sourceData) => [10, 20]',
      config: { systemId: 'crm', url: '/detail', queryParams: { n: '<<currentItem>>' } },
    },
  ],
};

const byName = (spans: ReceivedSpan[], name: string) => spans.filter((span) => span.name === name);
const one = (spans: ReceivedSpan[], name: string): ReceivedSpan => {
  const found = byName(spans, name);
  expect(found, name).toHaveLength(1);
  return found[0] as ReceivedSpan;
};

/** The parent span id each request of `path` named in its traceparent, with the trace id. */
function parentsSeen(target: HttpTarget, path: string, traceId: string): string[] {
  return target.requests
    .filter((req) => req.path === path && String(req.headers.traceparent).includes(traceId))
    .map((req) => {
      const header = String(req.headers.traceparent);
      expect(header).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      return header.split('-')[2] as string;
    });
}

/**
 * The structure every traced run of TOOL exports: run → step list → 3 pages; run → step each → 2 items;
 * the target saw each page's and each item's span as its request's parent.
 */
function expectToolTrace(spans: ReceivedSpan[], runId: string, traceId: string, target: HttpTarget) {
  const ofRun = spans.filter((span) => span.attributes['kubeglue.run.id'] === runId);
  const run = one(ofRun, 'run traced');
  expect(ofRun.every((span) => span.traceId === traceId)).toBe(true);
  const list = one(ofRun, 'step list');
  const each = one(ofRun, 'step each');
  expect([list.parentSpanId, each.parentSpanId]).toEqual([run.spanId, run.spanId]);
  const pages = [1, 2, 3].map((n) => one(ofRun, `step list page ${n}`));
  expect(pages.map((page) => page.parentSpanId)).toEqual([list.spanId, list.spanId, list.spanId]);
  expect(pages.map((page) => page.attributes['kubeglue.page.number'])).toEqual([1, 2, 3]);
  const items = [0, 1].map((n) => one(ofRun, `step each item ${n}`));
  expect(items.map((item) => item.parentSpanId)).toEqual([each.spanId, each.spanId]);
  // Children lie within their parents, in the engine's time.
  for (const [child, parent] of [
    [list, run],
    [pages[0], list],
    [items[1], each],
  ] as const) {
    expect(child?.startNs).toBeGreaterThanOrEqual(parent.startNs);
    expect(child?.endNs).toBeLessThanOrEqual(parent.endNs);
  }
  // The outbound traceparent names the exported page and item spans.
  expect(parentsSeen(target, '/items', traceId).sort()).toEqual(pages.map((page) => page.spanId).sort());
  expect(parentsSeen(target, '/detail', traceId).sort()).toEqual(items.map((item) => item.spanId).sort());
  // Ids, names and the documented attributes only: nothing of the inputs or the credentials.
  const exported = JSON.stringify(ofRun, (_key, value) =>
    typeof value === 'bigint' ? String(value) : value,
  );
  expect(exported).not.toContain(INPUT_SECRET);
  expect(exported).not.toContain(CREDENTIAL);
  return { run, list, each, pages, items };
}

async function createSystem(api: TestApi, target: HttpTarget): Promise<void> {
  await callOk(api, 'POST', '/v1/systems', {
    id: 'crm',
    url: target.url,
    authType: 'bearer',
    credentials: { bearerToken: CREDENTIAL },
  });
  await callOk(api, 'POST', '/v1/tools', TOOL);
}

describe('traces over OTLP/HTTP protobuf', () => {
  const otlp = useOtlpReceiver();
  const target = useHttpTarget();
  const api = useTestApi(() => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=abc%20def',
    OTEL_SERVICE_NAME: 'kubeglue-traces-test',
    OTEL_BSP_SCHEDULE_DELAY: '50',
  }));

  it("exports a sync run's trace under the caller's traceparent: run, steps, pages, loop items", async () => {
    routeTarget(target);
    await createSystem(api, target);
    const answer = await api.call<{ runId: string; success: boolean }>('POST', '/v1/tools/traced/run', {
      body: { inputs: { note: INPUT_SECRET } },
      headers: { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` },
    });
    expect(answer.status).toBe(200);
    // The run's trace id is the caller's trace.
    expect(answer.headers.get('x-trace-id')).toBe(CALLER_TRACE);
    const runId = answer.body.runId;
    const stored = await callOk<{ traceId: string; userId: string; options?: object }>(
      api,
      'GET',
      `/v1/runs/${runId}`,
    );
    expect(stored.traceId).toBe(CALLER_TRACE);
    // The caller's span id is kept for the trace only, never shown as an option of the run.
    expect(JSON.stringify(stored.options)).not.toContain(CALLER_SPAN);

    const spans = await otlp.waitForSpans((all) => all.some((span) => span.name === 'run traced'));
    const { run, list } = expectToolTrace(spans, runId, CALLER_TRACE, target);
    expect(run.parentSpanId).toBe(CALLER_SPAN);
    expect(run.statusCode).not.toBe(2);
    expect(run.attributes).toMatchObject({
      'kubeglue.tool.id': 'traced',
      'kubeglue.run.status': 'success',
      'kubeglue.run.request_source': 'api',
      'kubeglue.key.id': stored.userId,
    });
    expect(list.attributes).toMatchObject({ 'kubeglue.step.id': 'list' });
    expect(run.resource['service.name']).toBe('kubeglue-traces-test');
    expect(run.contentType).toBe('application/x-protobuf');
    expect(run.headers['x-collector-token']).toBe('abc def');
    expect(otlp.errors()).toEqual([]);
  }, 60_000);

  it('marks a failed step and its run as errors', async () => {
    target.route('GET', '/broken', { status: 404, body: { error: 'gone' } });
    await callOk(api, 'POST', '/v1/tools', {
      id: 'broken',
      steps: [{ id: 'fetch', config: { systemId: 'crm', url: '/broken' } }],
    });
    const answer = await api.call<{ runId: string }>('POST', '/v1/tools/broken/run', { body: {} });
    const runId = answer.body.runId;
    const spans = await otlp.waitForSpans((all) =>
      all.some((span) => span.name === 'run broken' && span.attributes['kubeglue.run.id'] === runId),
    );
    const run = one(
      spans.filter((span) => span.attributes['kubeglue.run.id'] === runId),
      'run broken',
    );
    // No traceparent came with the request: the run's span is the root of a trace of its own.
    expect(run.parentSpanId).toBe('');
    expect(run.traceId).toBe(answer.headers.get('x-trace-id'));
    expect(run.attributes['kubeglue.run.status']).toBe('failed');
    expect(run.statusCode).toBe(2);
    const step = one(
      spans.filter((span) => span.attributes['kubeglue.run.id'] === runId),
      'step fetch',
    );
    expect(step.parentSpanId).toBe(run.spanId);
    expect(step.statusCode).toBe(2);
  }, 60_000);
  it('links no parent from another trace than the one X-Trace-Id names', async () => {
    const traceId = '5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a';
    const answer = await api.call<{ runId: string }>('POST', '/v1/tools/broken/run', {
      body: {},
      headers: { 'x-trace-id': traceId, traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` },
    });
    expect(answer.headers.get('x-trace-id')).toBe(traceId);
    const runId = answer.body.runId;
    const spans = await otlp.waitForSpans((all) =>
      all.some((span) => span.name === 'run broken' && span.attributes['kubeglue.run.id'] === runId),
    );
    const run = spans.find(
      (span) => span.attributes['kubeglue.run.id'] === runId && span.name === 'run broken',
    );
    expect(run?.traceId).toBe(traceId);
    expect(run?.parentSpanId).toBe('');
  }, 60_000);
});

describe('traces over OTLP/HTTP JSON', () => {
  const otlp = useOtlpReceiver();
  const target = useHttpTarget();
  const api = useTestApi(() => ({
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.url}/v1/traces`,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '50',
  }));

  it("exports an async run's trace from the embedded worker pool, linked to the caller's traceparent", async () => {
    routeTarget(target);
    await createSystem(api, target);
    const answer = await api.call<{ runId: string }>('POST', '/v1/tools/traced/run', {
      body: { inputs: { note: INPUT_SECRET }, options: { async: true } },
      headers: { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` },
    });
    expect(answer.status).toBe(202);
    const runId = answer.body.runId;
    expect((await waitForRun(api, runId)).status).toBe('success');
    const spans = await otlp.waitForSpans((all) => all.some((span) => span.name === 'run traced'));
    const { run } = expectToolTrace(spans, runId, CALLER_TRACE, target);
    expect(run.parentSpanId).toBe(CALLER_SPAN);
    expect(run.contentType).toBe('application/json');
    expect(otlp.errors()).toEqual([]);
  }, 60_000);
});

describe('traces of a runner Pod', () => {
  const otlp = useOtlpReceiver();
  const target = useHttpTarget();

  it("exports the spans a runner reports, with the runner's span ids in the target's traceparent", async () => {
    routeTarget(target);
    const { store, close } = await openTestStore('sqlite');
    const dir = await mkdtemp(join(tmpdir(), 'kubeglue-runner-traces-'));
    const settings = loadSettings('api', {
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    const traces = (await openTraceExport(settings.traces)) as TraceExport;
    const internal = createInternalApi(store, { traces });
    try {
      await internal.listen();
      internal.systems.set('crm/prod', {
        id: 'crm',
        url: target.url,
        authType: 'bearer',
        credentials: { bearerToken: CREDENTIAL },
      });
      const token = await internal.startRun('pod-traced', TOOL, {
        systemIds: ['crm'],
        inputs: { note: INPUT_SECRET },
        // As accept.ts stores a caller's traceparent.
        options: parentSpanOption(CALLER_SPAN),
      });
      const { code } = await startRunnerProcess({ url: internal.url, runId: 'pod-traced', token, dir })
        .exited;
      expect(code).toBe(0);
      // The harness's trace id is not a W3C one: the trace's is derived from it, as the outbound traceparent's.
      const w3c = w3cTraceId((await store.getRun('pod-traced'))?.traceId ?? '');
      const spans = await otlp.waitForSpans((all) => all.some((span) => span.name === 'run traced'));
      const { run } = expectToolTrace(spans, 'pod-traced', w3c, target);
      expect(run.parentSpanId).toBe(CALLER_SPAN);
    } finally {
      await internal.close();
      await traces.shutdown();
      await close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('a collector that refuses', () => {
  const collector = useHttpTarget();

  it('is reported in the log, without the export headers; spans are dropped', async () => {
    collector.route('POST', '/v1/traces', { status: 400, body: { error: 'no' } });
    const lines: string[] = [];
    const settings = loadSettings('api', {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer%20${CREDENTIAL}`,
    });
    const traces = (await openTraceExport(settings.traces, (line) => lines.push(line))) as TraceExport;
    try {
      traces.span({
        traceId: CALLER_TRACE,
        spanId: CALLER_SPAN,
        name: 'run refused',
        startMs: Date.now() - 5,
        endMs: Date.now(),
        attributes: {},
        failed: false,
      });
      await traces.flush();
      expect(collector.count('/v1/traces')).toBe(1);
      expect(collector.requests[0]?.headers.authorization).toBe(`Bearer ${CREDENTIAL}`);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^traces: export of 1 span\(s\) to the OTLP endpoint failed/);
      expect(lines.join('\n')).not.toContain(CREDENTIAL);
    } finally {
      await traces.shutdown();
    }
  }, 30_000);
});
