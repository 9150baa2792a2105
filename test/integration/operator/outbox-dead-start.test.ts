/**
 * An async run whose start keeps failing does not stay `running` for ever: after KUBEGLUE_JOB_MAX_FAILURES
 * failed attempts its outbox row is dead and the run fails with the reason, which its notification carries.
 */
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { createEmbeddedKubeglueResources } from '../../../kube/resources/index.ts';
import { OutboxDelivery } from '../../../operator/outbox/outbox.ts';
import { createStartDeadHandler, createStartHandler } from '../../../operator/outbox/start.ts';
import { JobSupervisor } from '../../../platform/supervisor.ts';
import { openStore, type Store } from '../../../store/index.ts';
import { runningRun } from '../../support/store.ts';

const NAMESPACE = 'default';
let store: Store;
let loop: OutboxDelivery | undefined;

beforeEach(async () => {
  store = await openStore({ driver: 'sqlite', path: ':memory:' });
});
afterEach(async () => {
  await loop?.stop();
  await store.close();
});

it('fails an async run whose start failed KUBEGLUE_JOB_MAX_FAILURES times, and notifies its caller', async () => {
  const resources = createEmbeddedKubeglueResources(store.resources, NAMESPACE);
  // A run row without its tool snapshot: the start handler cannot build the ToolRun, every time.
  await store.insertRun(
    runningRun('run-unstartable', { options: { webhookUrl: 'https://caller.example/hooks/done' } }),
    { outbox: [{ kind: 'start', runId: 'run-unstartable', payload: {} }] },
  );
  const lines: string[] = [];
  const notified: Array<string | null> = [];
  loop = new OutboxDelivery({
    store,
    pollMs: 20,
    log: (line) => lines.push(line),
    jobs: new JobSupervisor({
      settings: { maxFailures: 2, retryDelayMs: 1 },
      log: (line) => lines.push(line),
    }),
    handlers: {
      start: createStartHandler({ store, resources, namespace: NAMESPACE }),
      notify: async (row) => {
        notified.push(row.runId);
        return { done: true };
      },
    },
    onDead: { start: createStartDeadHandler({ store, resources }) },
  });
  await loop.start();

  await vi.waitFor(async () => expect((await store.getRun('run-unstartable'))?.status).toBe('failed'), {
    timeout: 10_000,
    interval: 20,
  });
  const run = await store.getRun('run-unstartable');
  expect(run?.error).toMatch(
    /^The run could not be started: dead after 2 failed attempts in a row \(KUBEGLUE_JOB_MAX_FAILURES\): /,
  );
  // Its completion notification goes out, with the failure.
  await vi.waitFor(() => expect(notified).toEqual(['run-unstartable']), { timeout: 10_000, interval: 20 });
  expect(lines).toContainEqual(expect.stringContaining('given up'));
});

it('leaves the run alone when its ToolRun exists after all', async () => {
  const resources = createEmbeddedKubeglueResources(store.resources, NAMESPACE);
  await store.insertRun(runningRun('run-started'));
  const { toolRunFor } = await import('../../../runs/toolrun.ts');
  await resources.toolRuns.create(
    toolRunFor(
      runningRun('run-started', {
        tool: { id: 'tool-a', steps: [{ id: 's', config: { type: 'transform', transformCode: '() => 1' } }] },
      }),
      NAMESPACE,
    ),
  );
  await createStartDeadHandler({ store, resources })(
    { runId: 'run-started' },
    'dead after 5 failed attempts',
  );
  expect((await store.getRun('run-started'))?.status).toBe('running');
});
