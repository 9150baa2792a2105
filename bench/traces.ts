/**
 * `npm run bench -- traces`: what OpenTelemetry tracing costs a run (docs/operations.md "Traces"). Two
 * embedded servers side by side, one with tracing off (no endpoint: no SDK loaded) and one exporting every
 * run's spans over OTLP/HTTP protobuf to a sink on loopback that answers each export at once. Each tool is
 * run alternately on both, beside the same calls made directly (`traces.sync_run`); then the CPU of each
 * server's process tree per run, in alternating rounds (`traces.cpu_per_run`). The sink counts the spans,
 * so the figure says what was exported.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { createBenchTools, LISTING_ITEMS, PAGE_SIZE, startBenchServer } from './api.ts';
import { measureCpu } from './cpu.ts';
import { emit, percentile, progress, round, timed } from './stats.ts';

const SEQUENTIAL_RUNS = 1_000;
const CPU_ROUNDS = 5;
const CPU_RUNS = 400;

/** An OTLP/HTTP endpoint that takes every export and counts its bytes (spans are counted by the server's batches). */
async function startSink() {
  let exports = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    req.on('end', () => {
      exports += 1;
      res.setHeader('content-type', 'application/x-protobuf');
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received: () => ({ exports, bytes }),
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export async function benchTraces(): Promise<void> {
  const sink = await startSink();
  const off = await startBenchServer('traces-off');
  const on = await startBenchServer('traces-on', {
    OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
    OTEL_BSP_SCHEDULE_DELAY: '1000',
  });
  const agent = new Agent({ connections: 8 });
  const direct = async (path: string) => {
    const response = await request(`${off.target.url}${path}`, { dispatcher: agent });
    await response.body.json();
  };
  const directPages = async () => {
    for (let offset = 0; offset < LISTING_ITEMS; offset += PAGE_SIZE) {
      await direct(`/items?offset=${offset}&limit=${PAGE_SIZE}`);
    }
  };
  try {
    const offTools = await createBenchTools(off.call, off.target.url);
    const onTools = await createBenchTools(on.call, on.target.url);
    progress('traces: warming up');
    for (let i = 0; i < 200; i++) {
      await Promise.all([offTools.run(), onTools.run(), offTools.runPages(), onTools.runPages()]);
    }

    for (const [tool, runs, directCall, spans] of [
      ['bench-get', [offTools.run, onTools.run], () => direct('/ok'), 2],
      ['bench-pages', [offTools.runPages, onTools.runPages], directPages, 8],
    ] as const) {
      progress(
        `traces: ${SEQUENTIAL_RUNS} sequential runs of ${tool}, tracing off / on / direct, interleaved`,
      );
      const [runOff, runOn] = runs;
      // One of each per round, in turn, so the machine's load weighs on the three alike.
      const samples = { off: [] as number[], on: [] as number[], direct: [] as number[] };
      for (let i = 0; i < SEQUENTIAL_RUNS; i++) {
        samples.off.push(await timed(runOff));
        samples.on.push(await timed(runOn));
        samples.direct.push(await timed(directCall));
      }
      const offP50 = percentile(samples.off, 50);
      const onP50 = percentile(samples.on, 50);
      const directP50 = percentile(samples.direct, 50);
      emit({
        bench: 'traces.sync_run',
        tool,
        spansPerRun: spans,
        runs: SEQUENTIAL_RUNS,
        offP50Ms: round(offP50),
        onP50Ms: round(onP50),
        directP50Ms: round(directP50),
        offOverheadP50Ms: round(offP50 - directP50),
        onOverheadP50Ms: round(onP50 - directP50),
        tracingP50Ms: round(onP50 - offP50),
      });
    }

    progress(
      `traces: CPU per run of each server's tree, ${CPU_ROUNDS} alternating rounds of ${CPU_RUNS} runs`,
    );
    // Each round measures both servers back to back, so a round's pair shares the machine's load.
    const pairs: Array<{ off: number; on: number }> = [];
    for (let i = 0; i < CPU_ROUNDS; i++) {
      const pair = { off: 0, on: 0 };
      for (const [name, server, tools] of [
        ['off', off, offTools],
        ['on', on, onTools],
      ] as const) {
        const measured = await measureCpu({ server: server.server.child.pid ?? 0 }, async () => {
          for (let run = 0; run < CPU_RUNS; run++) await tools.runPages();
          return { completed: CPU_RUNS };
        });
        pair[name] = measured.cpuUsPerRun.total;
      }
      pairs.push(pair);
    }
    const range = (values: number[]) => [Math.min(...values), Math.max(...values)];
    emit({
      bench: 'traces.cpu_per_run',
      tool: 'bench-pages',
      spansPerRun: 8,
      runsPerRound: CPU_RUNS,
      offCpuUs: range(pairs.map((pair) => pair.off)),
      onCpuUs: range(pairs.map((pair) => pair.on)),
      // The figure to read: tracing's CPU per run, the median of each round's difference.
      tracingCpuUsMedian: Math.round(
        percentile(
          pairs.map((pair) => pair.on - pair.off),
          50,
        ),
      ),
      tracingCpuUsByRound: pairs.map((pair) => pair.on - pair.off),
      exported: sink.received(),
    });
  } finally {
    await agent.close();
    await on.stop();
    await off.stop();
    await sink.stop();
  }
}

if (import.meta.main) await benchTraces();
