import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installMetrics, type Metrics } from '../../../api/metrics.ts';
import { buildServer } from '../../../api/server.ts';

let app: FastifyInstance;
let metrics: Metrics;
let base: string;
let load = [2, 0, 1];
let backlog: number | Error = 7;

beforeAll(async () => {
  app = buildServer({ bodyLimitBytes: 1024, logLevel: 'silent', ready: () => true });
  metrics = installMetrics(app, {
    route: true,
    poolLoad: () => load,
    outboxBacklog: async () => {
      if (backlog instanceof Error) throw backlog;
      return backlog;
    },
  });
  app.get('/v1/tools/:toolId', async (request) => request.params);
  base = await app.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await app?.close();
});

async function scrape(): Promise<string> {
  const response = await fetch(`${base}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return response.text();
}

/** Sample lines of one metric name (exact name, any labels). */
function samples(text: string, name: string): string[] {
  return text.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));
}

describe('metrics', () => {
  it('serves the Prometheus text format with process metrics, without an API key', async () => {
    const text = await scrape();
    expect(text).toContain('# TYPE kubeglue_process_cpu_user_seconds_total counter');
    expect(text).toContain('# TYPE kubeglue_http_requests_total counter');
  });

  it('labels requests with the route template, so different ids share one series', async () => {
    for (const id of ['a', 'b', 'b'])
      expect((await fetch(`${base}/v1/tools/${id}?token=secret`)).status).toBe(200);
    expect((await fetch(`${base}/v1/nowhere/xyz`)).status).toBe(404);
    const text = await scrape();
    expect(samples(text, 'kubeglue_http_requests_total').filter((l) => l.includes('/v1/tools'))).toEqual([
      'kubeglue_http_requests_total{method="GET",route="/v1/tools/:toolId",status="200"} 3',
    ]);
    expect(samples(text, 'kubeglue_http_requests_total')).toContain(
      'kubeglue_http_requests_total{method="GET",route="unmatched",status="404"} 1',
    );
    expect(samples(text, 'kubeglue_http_request_duration_seconds_count')).toContain(
      'kubeglue_http_request_duration_seconds_count{method="GET",route="/v1/tools/:toolId"} 3',
    );
    expect(text).not.toMatch(/\/v1\/tools\/(a|b)\b|nowhere|secret/);
  });

  it('counts started and finished runs and their durations', async () => {
    metrics.runStarted('api', 'prod');
    metrics.runStarted('api', 'prod');
    metrics.runStarted('webhook', 'dev');
    metrics.runFinished('success', 'api', 1500);
    metrics.runFinished('failed', 'webhook', 20);
    const text = await scrape();
    expect(samples(text, 'kubeglue_runs_started_total').sort()).toEqual([
      'kubeglue_runs_started_total{source="api",mode="prod"} 2',
      'kubeglue_runs_started_total{source="webhook",mode="dev"} 1',
    ]);
    expect(samples(text, 'kubeglue_runs_finished_total').sort()).toEqual([
      'kubeglue_runs_finished_total{status="failed",source="webhook"} 1',
      'kubeglue_runs_finished_total{status="success",source="api"} 1',
    ]);
    expect(samples(text, 'kubeglue_run_duration_seconds_sum').sort()).toEqual([
      'kubeglue_run_duration_seconds_sum{status="failed"} 0.02',
      'kubeglue_run_duration_seconds_sum{status="success"} 1.5',
    ]);
    expect(samples(text, 'kubeglue_run_duration_seconds_bucket')).toContain(
      'kubeglue_run_duration_seconds_bucket{le="2.5",status="success"} 1',
    );
  });

  it('reports in-flight runs per worker as of the scrape, forgetting workers that went away', async () => {
    load = [2, 0, 1];
    expect(samples(await scrape(), 'kubeglue_worker_inflight_runs')).toEqual([
      'kubeglue_worker_inflight_runs{worker="0"} 2',
      'kubeglue_worker_inflight_runs{worker="1"} 0',
      'kubeglue_worker_inflight_runs{worker="2"} 1',
    ]);
    load = [5];
    expect(samples(await scrape(), 'kubeglue_worker_inflight_runs')).toEqual([
      'kubeglue_worker_inflight_runs{worker="0"} 5',
    ]);
  });

  it('reports the outbox backlog and keeps the last value when counting fails', async () => {
    backlog = 7;
    expect(samples(await scrape(), 'kubeglue_outbox_backlog')).toEqual(['kubeglue_outbox_backlog 7']);
    backlog = new Error('database is down');
    expect(samples(await scrape(), 'kubeglue_outbox_backlog')).toEqual(['kubeglue_outbox_backlog 7']);
    backlog = 3;
    expect(samples(await scrape(), 'kubeglue_outbox_backlog')).toEqual(['kubeglue_outbox_backlog 3']);
  });

  it('keeps servers in one process apart (each has its own registry)', async () => {
    const other = buildServer({ bodyLimitBytes: 1024, logLevel: 'silent', ready: () => true });
    const otherMetrics = installMetrics(other, { poolLoad: () => [] });
    try {
      otherMetrics.runStarted('cli', 'prod');
      const text = await otherMetrics.registry.metrics();
      expect(samples(text, 'kubeglue_runs_started_total')).toEqual([
        'kubeglue_runs_started_total{source="cli",mode="prod"} 1',
      ]);
      expect(text).not.toContain('kubeglue_outbox_backlog');
      expect(samples(await scrape(), 'kubeglue_runs_started_total')).not.toContainEqual(
        expect.stringContaining('cli'),
      );
    } finally {
      await other.close();
    }
  });
});
