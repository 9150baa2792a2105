/**
 * `npm run bench -- mysql`: a one-step tool whose step is a MariaDB `SELECT 1` (with a small
 * outputTransform, as a real tool has), run by the engine worker pool, beside the same statement executed
 * directly with mysql2 (a prepared statement on a pooled connection, as the step does) from this process,
 * in the same run: the added p50 of sequential runs (interleaved with direct calls) and the rate at
 * concurrency 32 against the direct rate; and the MySQL step function alone, called in this process, beside
 * the direct call (the protocol's own share of the added time: its setup statements, COMMIT, conversion).
 * Needs mariadbd (test/support/mariadb.ts starts one).
 */
import mysql from 'mysql2/promise';
import { defaultPoolSettings } from '../config/config.ts';
import type { RunOrder } from '../contract/wire/run-order.ts';
import { closeMysqlPools, executeMysqlStep } from '../engine/protocols/mysql.ts';
import { WorkerPool } from '../engine/worker/pool.ts';
import { createMariaDbDatabase, mariadbMissing, startTestMariaDb } from '../test/support/mariadb.ts';
import { runOrder } from '../test/support/run-order.ts';
import { emit, interleaved, overheadFigures, progress, STEP_BENCH, stepAgainstDirect } from './stats.ts';

const QUERY = 'SELECT 1 AS one';

function selectOrder(url: string, credentials: Record<string, string>): RunOrder {
  return runOrder(
    {
      id: 'bench-mysql-select',
      steps: [{ id: 'select', config: { url: '/', systemId: 'shop', body: { query: QUERY } } }],
      outputTransform: '(s) => s.select.data[0].one',
    },
    { systems: [{ id: 'shop', url, authType: 'dataStore', credentials }] },
  );
}

/** mysql.step_function_overhead, mysql.select_step_overhead, mysql.select_step_throughput. */
export async function benchMysql(): Promise<void> {
  const missing = mariadbMissing();
  if (missing) {
    progress(`mysql: skipped, ${missing}`);
    return;
  }
  const server = await startTestMariaDb();
  const database = await createMariaDbDatabase(server);
  // The step's pool holds at most 5 connections per worker; the direct side gets the same per process.
  const direct = mysql.createPool({
    host: server.host,
    port: server.port,
    user: database.user,
    password: database.password,
    database: database.name,
    connectionLimit: 5,
  });
  const pool = new WorkerPool(defaultPoolSettings());
  await pool.start();
  try {
    const credentials = { username: database.user, password: database.password };
    const viaPool = async () => {
      const result = await pool.run(selectOrder(database.bareUrl, credentials));
      if (result.status !== 'success' || result.data !== 1) {
        throw new Error(`bench run failed: ${result.error ?? JSON.stringify(result.data)}`);
      }
    };
    const directSelect = async () => {
      const [rows] = await direct.execute(QUERY);
      if ((rows as Array<{ one: number }>)[0]?.one !== 1) throw new Error('direct SELECT failed');
    };
    progress(`mysql: warming up (${pool.size} workers)`);
    for (let i = 0; i < 300; i++) {
      await viaPool();
      await directSelect();
    }

    const stepFunction = async () => {
      const rows = await executeMysqlStep({
        url: database.url,
        body: { query: QUERY },
        credentials: {},
        modify: false,
        signal: new AbortController().signal,
        deadline: Date.now() + 10_000,
      });
      if (JSON.stringify(rows) !== '[{"one":1}]') throw new Error('step function failed');
    };
    for (let i = 0; i < 300; i++) await stepFunction();
    progress(`mysql: ${STEP_BENCH.calls} calls of the step function vs direct SELECTs, interleaved`);
    emit({
      bench: 'mysql.step_function_overhead',
      calls: STEP_BENCH.calls,
      ...overheadFigures('step', await interleaved(STEP_BENCH.calls, stepFunction, directSelect)),
    });

    await stepAgainstDirect({
      protocol: 'mysql',
      operation: 'select',
      viaPool,
      direct: { call: directSelect, name: 'SELECTs', rateKey: 'directSelectsPerSec' },
      workers: pool.size,
    });
  } finally {
    await pool.close();
    await closeMysqlPools();
    await direct.end();
    await database.admin.end();
    await server.stop();
  }
}

if (import.meta.main) await benchMysql();
