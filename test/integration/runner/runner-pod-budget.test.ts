/**
 * A runner Pod's requests take from the same rate budget as the API's own workers: the runner process asks
 * the internal API (POST …/budget), which takes from the store, where another process's requests and
 * pauses already are. (The Pod itself on the real node: not here; this runs the runner's program as a
 * process against the internal API, as the other runner-pod tests do.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedKubeglueResources } from '../../../kube/resources/index.ts';
import { EmbeddedSecretStore } from '../../../kube/secrets/embedded.ts';
import { credentialsBox } from '../../../platform/secret-box.ts';
import { SystemBudgets } from '../../../systems/budgets.ts';
import { SystemService } from '../../../systems/service.ts';
import { useTempDir } from '../../support/fixture.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { createInternalApi, type InternalApiHarness } from '../../support/internal-api.ts';
import { startRunnerProcess } from '../../support/runner-process.ts';
import { useTestStore } from '../../support/store.ts';

const NAMESPACE = 'default';
const RATE = 5;

const { store } = useTestStore('sqlite');
const dir = useTempDir('kubeglue-runner-budget-');
const target = useHttpTarget();
let systems: SystemService;
let budgets: SystemBudgets;
let api: InternalApiHarness;

beforeAll(async () => {
  target.route('GET', '/ok', { body: { ok: true } });
  systems = new SystemService({
    resources: createEmbeddedKubeglueResources(store.resources, NAMESPACE),
    secrets: new EmbeddedSecretStore({
      store,
      namespace: NAMESPACE,
      box: credentialsBox(Buffer.alloc(32, 3)),
    }),
    namespace: NAMESPACE,
  });
  await systems.start();
  await systems.create({
    id: 'limited',
    url: target.url,
    environment: 'prod',
    rateLimit: { requestsPerSecond: RATE },
  });
  budgets = new SystemBudgets({
    store,
    budgetOf: (systemId, mode) => systems.budgetOf(systemId, mode),
    slotPollMs: 50,
  });
  api = createInternalApi(store, {
    resolveSystems: (ids, mode) => systems.resolveForRun(ids, mode),
    budgets,
  });
  await api.listen();
}, 60_000);

afterAll(async () => {
  await api?.close();
  await systems?.close();
});

describe("a runner Pod and a system's rate budget", () => {
  it("waits behind another process's requests and pause, then sends at the rate", async () => {
    // Another replica's worker took five turns (a second at 5/s) and was told to slow down for 1.5 s.
    for (let i = 0; i < RATE; i++) await budgets.take('limited', 'prod', 60_000);
    const pausedAt = Date.now();
    await budgets.pause('limited', 'prod', 1_500);

    const token = await api.startRun(
      'budget-1',
      {
        id: 'three-calls',
        steps: [{ id: 'call', dataSelector: '() => [1, 2, 3]', config: { systemId: 'limited', url: '/ok' } }],
      },
      { systemIds: ['limited'] },
    );
    const { code, output } = await startRunnerProcess({
      url: api.url,
      runId: 'budget-1',
      token,
      dir: dir.path,
    }).exited;
    expect(code, output).toBe(0);

    const arrivals = target.requests.filter((req) => req.path === '/ok').map((req) => req.receivedAt);
    expect(arrivals).toHaveLength(3);
    // Nothing before the pause ended, then one turn each 1/RATE s. A request may go up to half an interval
    // after its turn (a late timer on a busy host: engine/budget.ts), so two arrivals are at least half an
    // interval apart, and the three span at least two intervals less that half.
    expect(Math.min(...arrivals)).toBeGreaterThanOrEqual(pausedAt + 1_450);
    const interval = 1000 / RATE;
    const sorted = [...arrivals].sort((a, b) => a - b);
    for (let i = 1; i < sorted.length; i++) {
      expect(sorted[i]! - sorted[i - 1]!).toBeGreaterThanOrEqual(interval / 2 - 30);
    }
    expect(sorted.at(-1)! - sorted[0]!).toBeGreaterThanOrEqual(2 * interval - interval / 2 - 30);
    // One budget: the other process's five turns and the runner's three.
    // (and any turn a late sender gave up for a new one)
    const use = await budgets.use('limited', 'prod');
    expect(use).toMatchObject({ throttled: 1 });
    expect(use?.requests).toBeGreaterThanOrEqual(RATE + 3);
  });
});
