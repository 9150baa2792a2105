/**
 * The dashboard's bundle carries no zod: it imports the contract's schemas as types only
 * (docs/developers/architecture.md, "No zod in the bundle"), and what it takes of contract/ at run time
 * (the route client and the route paths generated from the table) is written without zod. What a first
 * visit fetches stays within the budget `ui.first_load` of `npm run bench` reports against.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildUi, FIRST_LOAD_JS_BUDGET_KIB, type UiBuild } from '../../../ui/build.ts';

const REPO = join(import.meta.dirname, '..', '..', '..');
/** An import of zod's run time: `import { z } from 'zod'`, not `import type`. */
const ZOD_AT_RUN_TIME = /^\s*import\s+(?!type\b)[^'"]*from\s*['"]zod(?:\/[^'"]*)?['"]/m;

describe("the dashboard's bundle", () => {
  let dir: string;
  let built: UiBuild;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubeglue-ui-bundle-'));
    built = await buildUi(join(dir, 'ui'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('holds no zod, and of contract/ only modules written without it', async () => {
    expect(built.modules.filter((module) => module.includes('node_modules/zod/'))).toEqual([]);
    const contract = built.modules.filter((module) => module.startsWith('contract/'));
    expect(contract).toContain('contract/api/route-client.ts');
    for (const module of contract) {
      expect(await readFile(join(REPO, module), 'utf8'), module).not.toMatch(ZOD_AT_RUN_TIME);
    }
  });

  it('holds the route table as method and path only, never its schemas', () => {
    expect(built.modules).toContain('contract/api/route-paths.ts');
    expect(built.modules).not.toContain('contract/api/routes.ts');
  });

  it('fetches at most the budget of JavaScript, gzip-compressed, on a first visit', async () => {
    let bytes = 0;
    for (const script of built.firstLoadScripts) {
      bytes += gzipSync(await readFile(join(built.outDir, script)), { level: 9 }).length;
    }
    expect(built.firstLoadScripts.length).toBeGreaterThan(0);
    expect(bytes / 1024).toBeLessThanOrEqual(FIRST_LOAD_JS_BUDGET_KIB);
  });
});
