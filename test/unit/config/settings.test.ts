/**
 * The settings registry (config/): every variable declared once, each role parsing only what it reads,
 * unknown variables reported with the closest known name.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import {
  defaultOperatorSettings,
  loadSettings,
  ROLES,
  SETTINGS,
  unknownSettings,
} from '../../../config/config.ts';
import { registry, section, setting } from '../../../config/setting.ts';
import { buildRunnerPod } from '../../../operator/toolrun/pod.ts';

const REPO = join(import.meta.dirname, '..', '..', '..');

describe('the registry', () => {
  it('refuses a variable declared twice', () => {
    const first = section('A', '', { port: setting('KUBEGLUE_X', z.string(), 'a', ['api'], 'one') });
    const second = section('B', '', { other: setting('KUBEGLUE_X', z.string(), 'b', ['operator'], 'two') });
    expect(() => registry(first, second)).toThrow('settings registry: KUBEGLUE_X is declared twice');
  });

  it('refuses a key declared twice, which would hide one of them', () => {
    const first = section('A', '', { port: setting('KUBEGLUE_X', z.string(), 'a', ['api'], 'one') });
    const second = section('B', '', { port: setting('KUBEGLUE_Y', z.string(), 'b', ['api'], 'two') });
    expect(() => registry(first, second)).toThrow("settings registry: 'port' is declared twice");
  });

  it('documents every setting in one line, for at least one role', () => {
    for (const declared of SETTINGS.byName.values()) {
      // kubeglue's own, the downward API's POD_IP, and the OpenTelemetry SDK's standard OTEL_* names.
      expect(declared.name).toMatch(/^(KUBEGLUE_[A-Z0-9_]+|POD_IP|OTEL_[A-Z0-9_]+)$/);
      expect(declared.doc.length, declared.name).toBeGreaterThan(10);
      expect(declared.doc, declared.name).not.toContain('\n');
      expect(declared.roles.length, declared.name).toBeGreaterThan(0);
    }
  });

  it('parses every default for every role that reads it', () => {
    for (const role of ROLES) expect(() => loadSettings(role, {}), role).not.toThrow();
  });
});

describe('a role', () => {
  it('gets what it reads and nothing else', () => {
    const operator = loadSettings('operator', {});
    expect(operator).toMatchObject({ runnerImage: 'ghcr.io/kubeglue/kubeglue:0.1.0', maxAsyncRuns: 64 });
    expect(operator).not.toHaveProperty('bodyLimitBytes');
    expect(operator).not.toHaveProperty('documentation');
    const api = loadSettings('api', {});
    expect(api).toMatchObject({
      internalPort: 8081,
      gateway: { streamLimit: 1000 },
      documentation: { maxPages: 20 },
    });
    expect(api).not.toHaveProperty('runnerImage');
    expect(api).not.toHaveProperty('lease');
    const runner = loadSettings('runner', {});
    expect(runner).toMatchObject({ runAttempt: 1, runner: { heartbeatMs: 5000 }, sandboxMemoryMb: 128 });
    expect(runner).not.toHaveProperty('host');
    expect(loadSettings('agent', {})).toEqual({});
    expect(Object.keys(loadSettings('bench', {}))).toEqual(['bench']);
  });

  it('is not stopped by a bad value of a variable only another role reads', () => {
    const env = { KUBEGLUE_BODY_LIMIT_BYTES: 'lots' };
    expect(() => loadSettings('operator', env)).not.toThrow();
    expect(() => loadSettings('api', env)).toThrow(/^invalid configuration: KUBEGLUE_BODY_LIMIT_BYTES: /);
  });

  it('fails naming every bad variable, never its value', () => {
    const attempt = () =>
      loadSettings('embedded', { KUBEGLUE_NOTIFY_SECRET: 'too-short-secret', KUBEGLUE_PORT: '99999' });
    expect(attempt).toThrow(/KUBEGLUE_PORT: .*KUBEGLUE_NOTIFY_SECRET: must be at least 24 characters/);
    expect(attempt).not.toThrow(/too-short-secret/);
  });

  it('gets the default of its deployment where roles differ', () => {
    expect(loadSettings('embedded', {}).egress.privateDefault).toBe('allow');
    expect(loadSettings('api', {}).egress.privateDefault).toBe('deny');
    expect(loadSettings('runner', {}).egress.privateDefault).toBe('deny');
    expect(loadSettings('operator', {}).internalUrl).toBe('http://kubeglue-internal:8081');
    expect(loadSettings('runner', {}).internalUrl).toBeUndefined();
  });
});

describe('unknown variables', () => {
  it('are reported with the closest known name; a variable of another role is not', () => {
    expect(
      unknownSettings({
        KUBEGLUE_PROT: '8080',
        KUBEGLUE_SANDBOX_MEMORY: '64',
        KUBEGLUE_ZZZ: '1',
        KUBEGLUE_RUNNER_IMAGE: 'x',
        KUBEGLUE_BENCH_SOAK_RUNS: '5',
        HOME: '/root',
      }),
    ).toEqual([
      'KUBEGLUE_PROT is not a kubeglue setting (did you mean KUBEGLUE_PORT?); it is ignored',
      'KUBEGLUE_SANDBOX_MEMORY is not a kubeglue setting (did you mean KUBEGLUE_SANDBOX_MEMORY_MB?); it is ignored',
      'KUBEGLUE_ZZZ is not a kubeglue setting; it is ignored',
    ]);
  });
});

/** The `name`s of the env entries of the containers of the Deployment whose name ends with `role`. */
function chartEnv(role: 'api' | 'operator'): string[] {
  const manifests = parseAllDocuments(readFileSync(join(REPO, 'deploy', 'kubeglue.yaml'), 'utf8'));
  const deployment = manifests
    .map((document) => document.toJS() as { kind?: string; metadata?: { name?: string }; spec?: unknown })
    .find((object) => object.kind === 'Deployment' && object.metadata?.name === `kubeglue-${role}`);
  const spec = deployment?.spec as { template: { spec: { containers: { env?: { name: string }[] }[] } } };
  return spec.template.spec.containers.flatMap((container) =>
    (container.env ?? []).map((entry) => entry.name),
  );
}

describe('what is given to a role is what it reads', () => {
  it.each(['api', 'operator'] as const)('the chart gives the %s container only its own settings', (role) => {
    const names = chartEnv(role).filter((name) => name.startsWith('KUBEGLUE_') || name === 'POD_IP');
    expect(names.length).toBeGreaterThan(5);
    for (const name of names) expect(SETTINGS.byName.get(name)?.roles, name).toContain(role);
  });

  it('the operator gives a runner Pod only runner settings', () => {
    const toolRun = {
      apiVersion: 'kubeglue.dev/v1alpha1',
      kind: 'ToolRun',
      metadata: { name: 'run-a', namespace: 'default', uid: 'u-1' },
      spec: { runId: 'a', tool: { id: 't', steps: [{ id: 's', config: { url: 'https://example.com' } }] } },
    } as Parameters<typeof buildRunnerPod>[0];
    const settings = defaultOperatorSettings({
      egress: { privateDefault: 'deny', allow: ['10.0.0.0/8'], deny: ['x.example'] },
    });
    const pod = buildRunnerPod(toolRun, 1, { podName: 'p', tokenSecretName: 's' }, settings);
    const names = (pod.spec.containers[0]?.env ?? []).map((entry) => entry.name);
    expect(names).toContain('KUBEGLUE_EGRESS_ALLOW');
    for (const name of names) expect(SETTINGS.byName.get(name)?.roles, name).toContain('runner');
    const env = Object.fromEntries(
      (pod.spec.containers[0]?.env ?? []).map((entry) => [entry.name, entry.value ?? 'secret']),
    );
    expect(loadSettings('runner', env)).toMatchObject({
      runId: 'a',
      runAttempt: 1,
      egress: { privateDefault: 'deny', allow: ['10.0.0.0/8'], deny: ['x.example'] },
    });
  });

  it('the image sets only declared variables', () => {
    const dockerfile = readFileSync(join(REPO, 'Dockerfile'), 'utf8');
    const names = [...dockerfile.matchAll(/\b(KUBEGLUE_[A-Z0-9_]+)=/g)].map((match) => match[1] as string);
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect(SETTINGS.byName.has(name), name).toBe(true);
  });
});
