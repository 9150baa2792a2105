import type { Db } from './driver.ts';
import {
  type FinishRunCall,
  finishRunCalls,
  type InsertRunCall,
  insertRunCalls,
} from './queries/run-writes.ts';
import type { FinishRun, InsertRunOptions, InsertRunResult, StoredRun } from './types.ts';

/**
 * Group commit of the two writes every run makes. Calls are queued and written together, many runs per
 * transaction with multi-row statements, so the cost per statement (on SQLite, statements run on the
 * caller's thread) is shared. Each promise settles only after the COMMIT that made its write durable, with
 * the same result the plain query would give.
 */
export interface RunWriteBatcher {
  insertRun(run: StoredRun, opts?: InsertRunOptions): Promise<InsertRunResult>;
  finishRun(runId: string, finish: FinishRun): Promise<boolean>;
}

export interface RunWriteBatcherOptions {
  /** Most calls written in one transaction (default 500). */
  maxBatchCalls?: number;
  /** Most file bytes in one transaction (default 16 MiB); a single larger call still goes alone. */
  maxBatchFileBytes?: number;
}

export interface ClosableRunWriteBatcher extends RunWriteBatcher {
  /** Refuses new calls and resolves once every queued call has settled. */
  close(): Promise<void>;
}

type Call =
  | {
      kind: 'insert';
      call: InsertRunCall;
      resolve: (result: InsertRunResult) => void;
      reject: (error: unknown) => void;
    }
  | {
      kind: 'finish';
      call: FinishRunCall;
      resolve: (won: boolean) => void;
      reject: (error: unknown) => void;
    };

const DEFAULT_MAX_BATCH_CALLS = 500;
const DEFAULT_MAX_BATCH_FILE_BYTES = 16 * 1024 * 1024;

/**
 * Flush policy: a flush starts on the next turn of the event loop after calls are queued, and again after
 * each batch while calls are waiting, so every call made in the meantime joins it; an idle store writes a
 * lone call after one turn. One flush at a time, so calls take effect in arrival order. A flush with
 * nothing left to write ends at once rather than a turn later: a call made after it (the next sync run's
 * start record) waits for the end of its own turn, behind what that turn queued before it (the run's
 * order to its worker), not for a turn queued before it arrived.
 */
export function createRunWriteBatcher(db: Db, opts: RunWriteBatcherOptions = {}): ClosableRunWriteBatcher {
  const maxCalls = opts.maxBatchCalls ?? DEFAULT_MAX_BATCH_CALLS;
  const maxFileBytes = opts.maxBatchFileBytes ?? DEFAULT_MAX_BATCH_FILE_BYTES;
  const queue: Call[] = [];
  let flushing: Promise<void> | undefined;
  let closed = false;

  const start = (): void => {
    // SQLite executes a query synchronously on this thread, so calls can only join a batch between
    // flushes: setImmediate lets every I/O and timer callback of this loop iteration queue its call
    // first (a microtask would flush the first call alone). pg gains the same way.
    flushing ??= nextTurn()
      .then(async () => {
        while (queue.length > 0) {
          await writeBatch(db, takeBatch(queue, maxCalls, maxFileBytes));
          // Nothing waiting: done now. A later call starts the next flush (finally, below, or enqueue).
          if (queue.length === 0) break;
          await nextTurn();
        }
      })
      .finally(() => {
        flushing = undefined;
        // A call queued between the last check and this point must not wait for the next caller.
        if (queue.length > 0) start();
      });
  };

  const enqueue = (call: Call): void => {
    if (closed) {
      call.reject(new Error('store is closed'));
      return;
    }
    queue.push(call);
    start();
  };

  return {
    insertRun: (run, insertOpts) =>
      new Promise((resolve, reject) =>
        enqueue({ kind: 'insert', call: { ...insertOpts, run }, resolve, reject }),
      ),
    finishRun: (runId, finish) =>
      new Promise((resolve, reject) => enqueue({ kind: 'finish', call: { runId, finish }, resolve, reject })),
    close: async () => {
      closed = true;
      while (flushing) await flushing;
    },
  };
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Takes the next calls from the queue. A batch runs its inserts before its finishes, which equals arrival order
 * unless a finish of a run id precedes an insert of the same id: the batch ends before such an insert.
 */
function takeBatch(queue: Call[], maxCalls: number, maxFileBytes: number): Call[] {
  const finishing = new Set<string>();
  let fileBytes = 0;
  let count = 0;
  for (const next of queue) {
    if (count === maxCalls) break;
    if (next.kind === 'insert' && finishing.has(next.call.run.runId)) break;
    if (next.kind === 'finish') {
      const bytes = (next.call.finish.files ?? []).reduce((sum, file) => sum + file.content.byteLength, 0);
      if (count > 0 && fileBytes + bytes > maxFileBytes) break;
      fileBytes += bytes;
      finishing.add(next.call.runId);
    }
    count++;
  }
  return queue.splice(0, count);
}

/** Writes one batch and settles each of its calls; never throws. */
async function writeBatch(db: Db, batch: Call[]): Promise<void> {
  const inserts = batch.filter((call) => call.kind === 'insert');
  const finishes = batch.filter((call) => call.kind === 'finish');
  let insertResults: InsertRunResult[];
  let finishResults: boolean[];
  try {
    const write = async (target: Db): Promise<[InsertRunResult[], boolean[]]> => [
      inserts.length > 0
        ? await insertRunCalls(
            target,
            inserts.map((call) => call.call),
          )
        : [],
      finishes.length > 0
        ? await finishRunCalls(
            target,
            finishes.map((call) => call.call),
          )
        : [],
    ];
    // The terminal writes are one atomic statement, and so is a lone insert (it reads only when it wrote
    // nothing). Several inserts may insert some rows and then read: if that read failed outside a transaction,
    // the rows would stay and the calls replayed below would wrongly be told 'existing'.
    const needsTransaction = inserts.length > 1 || (inserts.length > 0 && finishes.length > 0);
    [insertResults, finishResults] = needsTransaction ? await db.transaction(write) : await write(db);
  } catch {
    // Nothing of the batch was committed. Write the calls one by one (in order) so a failing call fails alone
    // and every other call gets its own result.
    for (const call of batch) await writeAlone(db, call);
    return;
  }
  for (const [index, call] of inserts.entries()) call.resolve(insertResults[index]!);
  for (const [index, call] of finishes.entries()) call.resolve(finishResults[index]!);
}

async function writeAlone(db: Db, call: Call): Promise<void> {
  try {
    if (call.kind === 'insert') call.resolve((await insertRunCalls(db, [call.call]))[0]!);
    else call.resolve((await finishRunCalls(db, [call.call]))[0]!);
  } catch (error) {
    call.reject(error);
  }
}
