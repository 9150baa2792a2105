/**
 * Tracing off costs nothing (docs/operations.md "Traces"): no module of the OpenTelemetry SDK is loaded
 * unless an OTLP endpoint is set. So the shipped code imports it only in platform/traces.ts, and only with
 * `import()` once the endpoint is known; a static import anywhere would load it in every process
 * (the api, the engine workers, runner Pods) at start.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '..', '..', '..');
const SKIPPED = new Set(['node_modules', 'dist', 'test', '.git']);

function shippedSources(): string[] {
  return readdirSync(REPO, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !SKIPPED.has(entry.name) && !entry.name.startsWith('.'))
    .flatMap((entry) =>
      readdirSync(join(REPO, entry.name), { recursive: true, withFileTypes: true })
        .filter((file) => file.isFile() && /\.tsx?$/.test(file.name))
        .map((file) => relative(REPO, join(file.parentPath, file.name)).split('\\').join('/')),
    );
}

/** Value imports of the SDK (type-only imports are erased when the code runs). */
const STATIC = /^\s*(?:import|export)(?!\s+type\b)[^;]*?from\s*['"]@opentelemetry\//m;
const DYNAMIC = /\bimport\(\s*['"]@opentelemetry\//;

describe('the OpenTelemetry SDK', () => {
  it('is imported by no shipped module at load time', () => {
    expect(shippedSources().filter((file) => STATIC.test(readFileSync(join(REPO, file), 'utf8')))).toEqual(
      [],
    );
  });

  it('is imported on demand only where traces are exported', () => {
    expect(shippedSources().filter((file) => DYNAMIC.test(readFileSync(join(REPO, file), 'utf8')))).toEqual([
      'platform/traces.ts',
    ]);
  });
});
