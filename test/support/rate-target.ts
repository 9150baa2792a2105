/**
 * A target that counts when requests arrive, in a process of its own so that what it measures is not the
 * test process's event loop (`node rate-target.ts [host]`; prints `listening on <url>`):
 * `GET /items?page=N…` answers `[{page: N}]`; `GET /arrivals` answers each other request's arrival
 * (epoch ms) and URL (path and query). See startRateTarget.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Arrival {
  at: number;
  url: string;
}

export interface RateTarget {
  /** As the callers reach it. */
  url: string;
  arrivals(): Promise<Arrival[]>;
  stop(): Promise<void>;
}

export interface RateTargetOptions {
  /** The address it listens on (default 127.0.0.1). */
  host?: string;
  /** Starts `command args` (default: a child of the test process, in its network namespace). */
  spawn?: (command: string, args: string[]) => ChildProcess;
  /** The target's port as the test process reaches it (default: the callers' URL). */
  reach?: (port: number) => Promise<string>;
}

function serve(host: string): void {
  const arrivals: Arrival[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://target');
    if (url.pathname === '/arrivals') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(arrivals));
      return;
    }
    arrivals.push({ at: Date.now(), url: req.url ?? '/' });
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify([{ page: Number(url.searchParams.get('page')) }]));
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, host, () => {
    console.log(`listening on http://${host}:${(server.address() as AddressInfo).port}`);
  });
}

/** The target in a child process, once it listens. */
export async function startRateTarget(options: RateTargetOptions = {}): Promise<RateTarget> {
  const args = [import.meta.filename, options.host ?? '127.0.0.1'];
  const child: ChildProcess = options.spawn
    ? options.spawn(process.execPath, args)
    : spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const listening = /listening on (\S+)/.exec(output);
      if (listening) resolve(listening[1] as string);
    });
    child.once('exit', (code) => reject(new Error(`rate target exited (${code}): ${output}`)));
  });
  const readUrl = options.reach ? await options.reach(Number(new URL(url).port)) : url;
  return {
    url,
    arrivals: async () => (await (await fetch(`${readUrl}/arrivals`)).json()) as Arrival[],
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill();
      await exited;
    },
  };
}

/** Requests per second: counted from the first one, and by the wall clock's seconds (the busiest). */
export function busiestSecond(times: readonly number[]): { fromFirst: number[]; byClock: number } {
  const start = Math.min(...times);
  const fromFirst: number[] = [];
  const byClock = new Map<number, number>();
  for (const at of times) {
    const second = Math.floor((at - start) / 1000);
    fromFirst[second] = (fromFirst[second] ?? 0) + 1;
    byClock.set(Math.floor(at / 1000), (byClock.get(Math.floor(at / 1000)) ?? 0) + 1);
  }
  return { fromFirst: Array.from(fromFirst, (n) => n ?? 0), byClock: Math.max(...byClock.values()) };
}

if (process.argv[1] === import.meta.filename) serve(process.argv[2] ?? '127.0.0.1');
