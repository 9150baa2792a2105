import { access, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmbedded } from '../../../bin/embedded.ts';
import { loadSettings } from '../../../config/config.ts';
import { EMBEDDED_STORE_FILE } from '../../../store/index.ts';
import { TEST_ADMIN_KEY, testServerEnv } from '../../support/embedded.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function start(dataDir: string): Promise<{ lines: string[]; close(): Promise<void>; url: string }> {
  const lines: string[] = [];
  const config = loadSettings('embedded', testServerEnv(dataDir));
  const embedded = await startEmbedded(config, (line) => lines.push(line));
  return { lines, close: () => embedded.close(), url: embedded.url };
}

describe('the embedded store file', () => {
  it('lives in the data dir and keeps what was stored across a restart', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-store-file-'));
    dirs.push(dataDir);
    const first = await start(dataDir);
    const created = await fetch(`${first.url}/v1/tools`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'kept', steps: [{ id: 'get', config: { url: 'http://127.0.0.1:9/x' } }] }),
    });
    expect(created.status).toBeLessThan(300);
    await first.close();
    await access(join(dataDir, EMBEDDED_STORE_FILE));

    const second = await start(dataDir);
    try {
      const tool = await fetch(`${second.url}/v1/tools/kept`, {
        headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
      });
      expect(tool.status).toBe(200);
      expect(second.lines.some((line) => line.includes('PGlite'))).toBe(false);
    } finally {
      await second.close();
    }
  });

  it('says at startup that a PGlite data dir of an earlier version is not converted, and starts anyway', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-store-pglite-'));
    dirs.push(dataDir);
    await writeFile(join(dataDir, 'PG_VERSION'), '17\n');
    const server = await start(dataDir);
    try {
      const notice = server.lines.find((line) => line.includes('PGlite'));
      expect(notice).toContain('NOT converted');
      expect(notice).toContain(join(dataDir, EMBEDDED_STORE_FILE));
      const health = await fetch(`${server.url}/v1/tools`, {
        headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
      });
      expect(health.status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
