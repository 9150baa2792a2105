/**
 * Issue 7, item 2, at the store: runtime credentials are written by the run's own insert (group commit
 * included) and only when that insert stored the run, on both drivers; the vault binds them to the run id.
 */
import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { StoreRuntimeCredentialVault } from '../../../runs/runtime-credentials.ts';
import { describeStore, runningRun } from '../../support/store.ts';

const bytes = (text: string) => new Uint8Array(Buffer.from(text));
const text = (value: Uint8Array | undefined) => (value ? Buffer.from(value).toString() : undefined);

describeStore('run credentials', (store) => {
  it('are written with the run, by the first of several calls for a new run id in one batch', async () => {
    const [first, second] = await Promise.all([
      store.batch.insertRun(runningRun('batch-1'), { inputHash: 'h1', sealedCredentials: bytes('first') }),
      store.batch.insertRun(runningRun('batch-1'), { inputHash: 'h2', sealedCredentials: bytes('second') }),
    ]);
    expect([first.status, second.status]).toEqual(['inserted', 'conflict']);
    expect(text(await store.getRunCredentials('batch-1'))).toBe('first');
  });

  it('are written only by the insert that won, when separate transactions race for a run id', async () => {
    for (let round = 0; round < 5; round++) {
      const runId = `race-${round}`;
      const results = await Promise.all(
        ['a', 'b'].map((name) =>
          store.insertRun(runningRun(runId), { inputHash: name, sealedCredentials: bytes(`from-${name}`) }),
        ),
      );
      const winner = results[0]?.status === 'inserted' ? 'a' : 'b';
      expect(results.map((r) => r.status).sort()).toEqual(['conflict', 'inserted']);
      expect(text(await store.getRunCredentials(runId))).toBe(`from-${winner}`);
    }
  });

  it('are never replaced by a retry of an existing run', async () => {
    await store.batch.insertRun(runningRun('retry-1'), { inputHash: 'h', sealedCredentials: bytes('kept') });
    const retry = await store.batch.insertRun(runningRun('retry-1'), {
      inputHash: 'h',
      sealedCredentials: bytes('replacement'),
    });
    expect(retry.status).toBe('existing');
    expect(text(await store.getRunCredentials('retry-1'))).toBe('kept');
  });

  it('are removed for runs that ended, and with their run', async () => {
    await store.batch.insertRun(runningRun('ended-1'), { sealedCredentials: bytes('x') });
    await store.batch.insertRun(runningRun('live-1'), { sealedCredentials: bytes('y') });
    await store.batch.finishRun('ended-1', {
      status: 'success',
      completedAt: '2026-03-01T10:00:01.000Z',
      durationMs: 1000,
    });
    expect(await store.pruneRunCredentials()).toBeGreaterThanOrEqual(1);
    expect(await store.getRunCredentials('ended-1')).toBeUndefined();
    expect(text(await store.getRunCredentials('live-1'))).toBe('y');
    expect(await store.deleteRunCredentials('live-1')).toBe(true);
    expect(await store.deleteRunCredentials('live-1')).toBe(false);
  });

  it('open only for the run id they were sealed for', async () => {
    const vault = new StoreRuntimeCredentialVault({ store, masterKey: randomBytes(32) });
    const credentials = { token: 'secret-token-1', crm: { apiKey: 'k-123456' } };
    await store.batch.insertRun(runningRun('vault-1'), {
      sealedCredentials: vault.seal('vault-1', credentials),
    });
    expect(await vault.get('vault-1')).toEqual(credentials);
    // The same ciphertext under another run id is refused, not opened.
    await store.batch.insertRun(runningRun('vault-2'), {
      sealedCredentials: (await store.getRunCredentials('vault-1')) as Uint8Array,
    });
    await expect(vault.get('vault-2')).rejects.toThrow(/run 'vault-2' cannot be read/);
    await vault.delete('vault-1');
    expect(await vault.get('vault-1')).toBeUndefined();
  });
});
