/**
 * smb.download_throughput: an SMB step that gets a 10 MiB file from a real smbd (test/support/samba.ts,
 * which needs root and Debian's samba package) against the direct client download of the same file in
 * the same run, interleaved. The step runs two ways: in an engine worker of the pool, as a run does
 * (the file then crosses the worker's IPC as the step's data, base64 in a file reference), and in this
 * process through the engine's protocols (the SMB module, its file-step driver and the decoding, without
 * a worker). The direct download is the same client (engine/protocols/smb2/client.ts) over a plain
 * socket: connect, log on, read, close.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { defaultPoolSettings } from '../config/config.ts';
import type { JsonValue } from '../contract/json.ts';
import type { RunOrder } from '../contract/wire/run-order.ts';
import { createProtocols } from '../engine/protocols/index.ts';
import { SmbClient } from '../engine/protocols/smb2/client.ts';
import { WorkerPool } from '../engine/worker/pool.ts';
import { runOrder } from '../test/support/run-order.ts';
import { sambaMissing, startSamba, type TestSamba } from '../test/support/samba.ts';
import { emit, percentile, progress, round, timed } from './stats.ts';

const FILE_BYTES = 10 * 1024 * 1024;
const ROUNDS = 20;
/** A 10 MiB file is 13.3 MiB of base64 in the step's data: above the default step data cap (10 MiB). */
const LIMITS = { maxStepDataBytes: 64 * 1024 * 1024, maxResultBytes: 128 * 1024 * 1024 };

/** The dialect the direct downloads negotiated, for the figure. */
let dialect = '';

async function directDownload(samba: TestSamba): Promise<number> {
  const socket = connect(samba.port, samba.host);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const client = await SmbClient.connect({
    socket,
    server: samba.host,
    share: 'files',
    identity: { username: samba.username, password: samba.password, domain: samba.workgroup },
    idleTimeoutMs: 60_000,
  });
  dialect = client.dialect;
  const bytes = await client.read('bench.bin', FILE_BYTES);
  await client.close();
  return bytes.length;
}

function getOrder(samba: TestSamba, runNo: number): RunOrder {
  const url = `${samba.url}/files`;
  return runOrder(
    {
      id: 'bench-smb',
      steps: [{ id: 'get', config: { url, systemId: 'nas', body: { operation: 'get', path: 'bench.bin' } } }],
    },
    {
      runId: `bench-smb-${runNo}`,
      systems: [
        {
          id: 'nas',
          url,
          credentials: { username: samba.username, password: samba.password, domain: samba.workgroup },
        },
      ] as RunOrder['systems'],
    },
  );
}

function sizeOf(data: JsonValue): number {
  const file = (data as { file?: { size?: number } } | null)?.file;
  return file?.size ?? -1;
}

function rate(samplesMs: number[]): number {
  return FILE_BYTES / (1024 * 1024) / (percentile(samplesMs, 50) / 1000);
}

/** smb.download_throughput (MiB/s at the p50 of each way, and the ratios to the direct download). */
export async function benchSmb(): Promise<void> {
  const missing = sambaMissing();
  if (missing) {
    progress(`smb: skipped: ${missing}`);
    return;
  }
  const samba = await startSamba();
  const pool = new WorkerPool({ ...defaultPoolSettings(), ...LIMITS, workers: 1 });
  await pool.start();
  try {
    await writeFile(join(samba.shares.files, 'bench.bin'), randomBytes(FILE_BYTES));
    const protocols = createProtocols();
    const inProcess = async () => {
      const data = await protocols.smb(
        {
          url: `${samba.url}/files`,
          body: { operation: 'get', path: 'bench.bin' },
          credentials: { username: samba.username, password: samba.password, domain: samba.workgroup },
          modify: false,
        },
        { signal: new AbortController().signal, deadline: Date.now() + 60_000, traceId: 'bench' },
      );
      if (sizeOf(data) !== FILE_BYTES) throw new Error('the in-process step read the wrong size');
    };
    let runNo = 0;
    const viaPool = async () => {
      const result = await pool.run(getOrder(samba, runNo++));
      if (result.status !== 'success' || sizeOf(result.data) !== FILE_BYTES) {
        throw new Error(`the SMB step failed: ${result.error ?? result.status}`);
      }
    };
    const direct = async () => {
      if ((await directDownload(samba)) !== FILE_BYTES)
        throw new Error('the direct download read the wrong size');
    };
    progress('smb: warming up');
    for (let i = 0; i < 3; i++) {
      await direct();
      await inProcess();
      await viaPool();
    }
    progress(`smb: ${ROUNDS} rounds of a 10 MiB get: direct, in-process step, step in a worker`);
    const samples = { direct: [] as number[], inProcess: [] as number[], pool: [] as number[] };
    for (let i = 0; i < ROUNDS; i++) {
      samples.direct.push(await timed(direct));
      samples.inProcess.push(await timed(inProcess));
      samples.pool.push(await timed(viaPool));
    }
    const directRate = rate(samples.direct);
    emit({
      bench: 'smb.download_throughput',
      fileMiB: FILE_BYTES / (1024 * 1024),
      rounds: ROUNDS,
      dialect: `SMB ${dialect}, signed`,
      directMiBPerSec: round(directRate, 1),
      stepInProcessMiBPerSec: round(rate(samples.inProcess), 1),
      stepInWorkerMiBPerSec: round(rate(samples.pool), 1),
      ratioInProcess: round(rate(samples.inProcess) / directRate, 2),
      ratioInWorker: round(rate(samples.pool) / directRate, 2),
      directP50Ms: round(percentile(samples.direct, 50), 1),
      stepInProcessP50Ms: round(percentile(samples.inProcess, 50), 1),
      stepInWorkerP50Ms: round(percentile(samples.pool, 50), 1),
      targetRatio: 0.5,
    });
  } finally {
    await pool.close();
    await samba.stop();
  }
}

if (import.meta.main) await benchSmb();
