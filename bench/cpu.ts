import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { processTree } from './pss.ts';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

interface ProcessCpu {
  /** The process's own user + system time, µs. */
  ownUs: number;
  /** Of its children that exited and were waited for (cutime + cstime), µs. */
  reapedUs: number;
}

/** CPU time of one process so far; zeros if it is gone. */
async function processCpu(pid: number): Promise<ProcessCpu> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  // Fields after the parenthesised command name (which may hold spaces): utime, stime, cutime, cstime are
  // fields 14-17 of the line, 12-15 of what follows the name.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const us = (index: number) => (Number(fields[index] ?? 0) / TICKS_PER_SECOND) * 1_000_000;
  return { ownUs: us(11) + us(12), reapedUs: us(13) + us(14) };
}

/** The processes whose CPU a run costs, by kind. */
export interface CpuRoots {
  /** The server (the README's start command's process after it execs node); its descendants are the engine workers. */
  server: number;
  /** Postgres's postmaster, when the store is Postgres: its tree is the backends and its helpers. */
  postgres?: number;
  /** The external load generator. */
  loadClient?: number;
}

export interface CpuSample {
  server: number;
  /** The live engine workers plus the workers that exited (reaped by the server). */
  workers: number;
  postgres: number;
  loadClient: number;
  /** This process: the HTTP target the steps call and the bench's bookkeeping. */
  bench: number;
}

/** CPU time so far, µs, of every process kind. */
export async function sampleCpu(roots: CpuRoots): Promise<CpuSample> {
  const [server, ...workerPids] = await processTree(roots.server);
  const serverCpu = await processCpu(server ?? roots.server);
  const workers = await Promise.all(workerPids.map(processCpu));
  // A tree's processes alive now, plus the children its root reaped (a Postgres backend that closed).
  const treeUs = async (root: number | undefined) => {
    if (root === undefined) return 0;
    const all = await Promise.all((await processTree(root)).map(processCpu));
    return all.reduce((sum, cpu) => sum + cpu.ownUs, 0) + (all[0]?.reapedUs ?? 0);
  };
  const self = process.cpuUsage();
  return {
    server: serverCpu.ownUs,
    workers: serverCpu.reapedUs + workers.reduce((sum, cpu) => sum + cpu.ownUs + cpu.reapedUs, 0),
    postgres: await treeUs(roots.postgres),
    loadClient: await treeUs(roots.loadClient),
    bench: self.user + self.system,
  };
}

/**
 * `cpuUsPerRun`: CPU-µs per run of the tree that serves it (`total`: server, engine workers and, on
 * Postgres, the database's processes), by process kind; the load generator and the bench (the target the
 * steps call) beside it, outside the total. CPU time, unlike wall time, barely moves when other work shares
 * the cores. Processes that exit during a phase keep counting through their parent's reaped-children time.
 */
export function cpuPerRun(before: CpuSample, after: CpuSample, runs: number) {
  const per = (key: keyof CpuSample) => Math.round((after[key] - before[key]) / Math.max(1, runs));
  const server = per('server');
  const workers = per('workers');
  const postgres = per('postgres');
  return {
    total: server + workers + postgres,
    server,
    workers,
    ...(after.postgres > 0 ? { postgres } : {}),
    loadClient: per('loadClient'),
    bench: per('bench'),
  };
}
export type CpuPerRun = ReturnType<typeof cpuPerRun>;

/** Measures `cpuUsPerRun` over `work`, which returns the runs it completed. */
export async function measureCpu<T extends { completed: number }>(
  roots: CpuRoots,
  work: () => Promise<T>,
): Promise<T & { cpuUsPerRun: CpuPerRun }> {
  const before = await sampleCpu(roots);
  const result = await work();
  const after = await sampleCpu(roots);
  return { ...result, cpuUsPerRun: cpuPerRun(before, after, result.completed) };
}

/** The postmaster of the Postgres server behind `url`: the parent of a backend of ours (same machine). */
export async function postmasterPid(url: string): Promise<number | undefined> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const stat = await readFile(`/proc/${rows[0]?.pid}/stat`, 'utf8').catch(() => '');
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isFinite(parent) && parent > 0 ? parent : undefined;
  } finally {
    await client.end();
  }
}
