import { readFile } from 'node:fs/promises';
import { processTree } from './pss.ts';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU time (user + system) of one process so far, µs; 0 if it is gone. */
async function processCpuUs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  // Fields after the parenthesised command name (which may hold spaces): utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11] ?? 0) + Number(fields[12] ?? 0);
  return (ticks / TICKS_PER_SECOND) * 1_000_000;
}

export interface TreeCpu {
  /** The root process (the API server). */
  serverUs: number;
  /** Its descendants (the engine workers), summed. */
  workersUs: number;
  /** This process (the load generator and the HTTP target of the benchmarks). */
  selfUs: number;
}

/** CPU time so far of the server, its workers (those alive now) and this process. */
export async function treeCpu(rootPid: number): Promise<TreeCpu & { workerPids: number[] }> {
  const [root, ...workerPids] = await processTree(rootPid);
  const self = process.cpuUsage();
  const workers = await Promise.all(workerPids.map(processCpuUs));
  return {
    serverUs: await processCpuUs(root ?? rootPid),
    workersUs: workers.reduce((a, b) => a + b, 0),
    selfUs: self.user + self.system,
    workerPids,
  };
}

/**
 * Measures CPU-µs per completed run over `work` for each process role. Workers that exit during the
 * phase lose their time (the pool retires idle ones only after 60 s, far longer than a phase).
 */
export async function cpuPerRun(
  rootPid: number,
  work: () => Promise<number>,
): Promise<TreeCpu & { runs: number }> {
  const before = await treeCpu(rootPid);
  const runs = await work();
  const after = await treeCpu(rootPid);
  // A worker started during the phase counts from zero.
  const per = (a: number, b: number) => Math.round((a - b) / Math.max(1, runs));
  return {
    runs,
    serverUs: per(after.serverUs, before.serverUs),
    workersUs: per(after.workersUs, before.workersUs),
    selfUs: per(after.selfUs, before.selfUs),
  };
}
