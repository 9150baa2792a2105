/**
 * `npm run bench [-- name…]`: prints one JSON line per figure on stdout (progress on stderr).
 * Names: store, sandbox, engine, budget, api, dispatch, list-runs, operator (needs KUBEBUILDER_ASSETS), runner, gateway, soak, ui,
 * redis (needs redis-server), mysql (needs mariadbd), smb (needs smbd and root), traces.
 * Without
 * names, all run but the opt-in ones: real-node (root and the real node's caches, test/support/kube-node/prepare.sh).
 * Figures, never pass/fail.
 */
import { benchApi } from './api.ts';
import { benchBudget } from './budget.ts';
import { benchDispatch } from './dispatch.ts';
import { benchEngine } from './engine.ts';
import { benchGateway } from './gateway.ts';
import { benchListRuns } from './list-runs.ts';
import { benchMysql } from './mysql.ts';
import { benchOperator } from './operator.ts';
import { benchRealNode } from './real-node.ts';
import { benchRedis } from './redis.ts';
import { benchRunner } from './runner.ts';
import { benchSandbox } from './sandbox.ts';
import { benchSmb } from './smb.ts';
import { benchSoak } from './soak.ts';
import { benchStore } from './store.ts';
import { benchTraces } from './traces.ts';
import { benchUi } from './ui.ts';

const BENCHES: Record<string, () => Promise<void>> = {
  store: benchStore,
  sandbox: benchSandbox,
  engine: benchEngine,
  budget: benchBudget,
  api: benchApi,
  dispatch: benchDispatch,
  'list-runs': benchListRuns,
  operator: benchOperator,
  runner: benchRunner,
  gateway: benchGateway,
  smb: benchSmb,
  soak: benchSoak,
  ui: benchUi,
  redis: benchRedis,
  mysql: benchMysql,
  traces: benchTraces,
  'real-node': benchRealNode,
};
/** Run only when named (`dispatch`: `api` prints the same figure). */
const OPT_IN = new Set(['real-node', 'dispatch']);

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !(name in BENCHES));
if (unknown.length) {
  console.error(`bench: unknown benchmark ${unknown.join(', ')}; known: ${Object.keys(BENCHES).join(', ')}`);
  process.exit(2);
}
for (const [name, bench] of Object.entries(BENCHES)) {
  if (wanted.length === 0 ? !OPT_IN.has(name) : wanted.includes(name)) await bench();
}
