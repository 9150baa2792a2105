/**
 * A target that counts when requests arrive, in a process of its own so that what it measures is not the
 * test process's event loop (`node rate-target.ts`; prints `listening on <url>`): `GET /items?page=N`
 * answers `[{page: N}]`; `GET /arrivals` answers when each /items request arrived (epoch ms). See
 * startRateTarget.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RateTarget {
  url: string;
  arrivals(): Promise<number[]>;
  stop(): Promise<void>;
}

function serve(): void {
  const arrivals: number[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://target');
    if (url.pathname === '/arrivals') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(arrivals));
      return;
    }
    arrivals.push(Date.now());
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify([{ page: Number(url.searchParams.get('page')) }]));
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  });
}

/** The target in a child process, once it listens. */
export async function startRateTarget(): Promise<RateTarget> {
  const child: ChildProcess = spawn(process.execPath, [import.meta.filename], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const listening = /listening on (\S+)/.exec(output);
      if (listening) resolve(listening[1] as string);
    });
    child.once('exit', (code) => reject(new Error(`rate target exited (${code}): ${output}`)));
  });
  return {
    url,
    arrivals: async () => (await (await fetch(`${url}/arrivals`)).json()) as number[],
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill();
      await exited;
    },
  };
}

if (process.argv[1] === import.meta.filename) serve();
