import { readdir, readFile, readlink } from 'node:fs/promises';
import { basename } from 'node:path';

/** The process and all its descendants (from /proc/<pid>/task/<tid>/children), depth first. */
export async function processTree(rootPid: number): Promise<number[]> {
  const pids: number[] = [];
  const visit = async (pid: number): Promise<void> => {
    pids.push(pid);
    let children = '';
    try {
      const tasks = await readdir(`/proc/${pid}/task`);
      for (const task of tasks) {
        children += ` ${await readFile(`/proc/${pid}/task/${task}/children`, 'utf8').catch(() => '')}`;
      }
    } catch {
      return; // gone meanwhile
    }
    for (const child of children.split(/\s+/).filter(Boolean)) await visit(Number(child));
  };
  await visit(rootPid);
  return pids;
}

/**
 * What each process of the tree runs (`node kubeglue.js`, `node worker.js`, `node npm-cli.js`, `sh`…: the
 * executable and the script, by base name; node renames its main thread, so /proc/<pid>/comm does not
 * tell), to show what stays resident.
 */
export async function treeCommands(rootPid: number): Promise<string[]> {
  const pids = await processTree(rootPid);
  return Promise.all(
    pids.map(async (pid) => {
      const exe = basename(await readlink(`/proc/${pid}/exe`).catch(() => '?'));
      const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
      const script = argv.slice(1).find((arg) => arg && !arg.startsWith('-'));
      return script ? `${exe} ${basename(script)}` : exe;
    }),
  );
}

/** Proportional set size of one process, MiB (0 if it is gone). */
async function pssMib(pid: number): Promise<number> {
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
  return Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0) / 1024;
}

/** PSS of the whole process tree under `rootPid` (shared pages counted once, split between sharers). */
export async function treePss(rootPid: number): Promise<{ pssMib: number; processes: number }> {
  const pids = await processTree(rootPid);
  const sizes = await Promise.all(pids.map(pssMib));
  return { pssMib: sizes.reduce((a, b) => a + b, 0), processes: pids.length };
}

/** Samples the tree's PSS every `everyMs` until stopped; reports the largest. */
export function samplePeakPss(rootPid: number, everyMs = 500): { stop(): Promise<number> } {
  let peak = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      peak = Math.max(peak, (await treePss(rootPid)).pssMib);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return Math.max(peak, (await treePss(rootPid)).pssMib);
    },
  };
}
