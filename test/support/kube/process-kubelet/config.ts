import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, totalmem } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import { isKubeApiError, type KubeApi } from './api.ts';
import { expandVariables, type PathMapping, pathMapper } from './paths.ts';
import type { ConfigMap, Container, KeyToPath, Pod, Secret } from './types.ts';

/**
 * A local "image": the argv that plays its ENTRYPOINT, plus optional Docker-style CMD, WORKDIR and
 * ENV. A bare string[] is an entrypoint with no default args.
 */
export interface ImageSpec {
  entrypoint: string[];
  cmd?: string[];
  workingDir?: string;
  env?: Record<string, string>;
}

export type ImageEntry = string[] | ImageSpec;

export function toImageSpec(entry: ImageEntry): ImageSpec {
  return Array.isArray(entry) ? { entrypoint: entry } : entry;
}

/** The container cannot be configured yet (a missing Secret or key): waiting CreateContainerConfigError. */
export class ContainerConfigError extends Error {}

/** A volume cannot be set up yet (a missing Secret or ConfigMap): the Pod stays ContainerCreating. */
export class VolumeSetupError extends Error {}

/** Where a Pod's files live under the kubelet's work dir. */
export class PodLayout {
  readonly root: string;

  constructor(workDir: string, pod: Pod) {
    const { namespace = 'default', name, uid = 'no-uid' } = pod.metadata;
    this.root = join(workDir, 'pods', `${namespace}_${name}_${uid}`);
  }

  get tmp(): string {
    return join(this.root, 'tmp');
  }

  get home(): string {
    return join(this.root, 'home');
  }

  volume(name: string): string {
    return join(this.root, 'volumes', name);
  }

  containerDir(name: string): string {
    return join(this.root, 'containers', name);
  }

  terminationLog(container: string): string {
    return join(this.containerDir(container), 'termination-log');
  }

  log(container: string, restartCount: number): string {
    return join(this.containerDir(container), `${restartCount}.log`);
  }

  /** Keeps a mapped path inside the Pod dir even if the spec holds `..` tricks. */
  inside(path: string): string {
    const full = resolve(path);
    if (full !== this.root && !full.startsWith(this.root + sep))
      throw new Error(`${path} escapes the pod dir`);
    return full;
  }
}

/** The in-container paths of one container and their real location (volume mounts, /tmp, termination log). */
export function containerPathMappings(container: Container, layout: PodLayout): PathMapping[] {
  const mappings: PathMapping[] = [];
  for (const mount of container.volumeMounts ?? []) {
    const base = layout.volume(mount.name);
    mappings.push({
      containerPath: mount.mountPath,
      hostPath: layout.inside(mount.subPath ? join(base, mount.subPath) : base),
    });
  }
  mappings.push({ containerPath: '/tmp', hostPath: layout.tmp });
  mappings.push({
    containerPath: container.terminationMessagePath ?? '/dev/termination-log',
    hostPath: layout.terminationLog(container.name),
  });
  return mappings;
}

/** Reads Secrets and ConfigMaps of one namespace, once each per Pod start. */
class ObjectReader {
  readonly #api: KubeApi;
  readonly #namespace: string;
  readonly #cache = new Map<string, Promise<Record<string, Buffer> | undefined>>();

  constructor(api: KubeApi, namespace: string) {
    this.#api = api;
    this.#namespace = namespace;
  }

  /** The decoded data of a Secret or ConfigMap, or undefined when it does not exist. */
  read(kind: 'secret' | 'configmap', name: string): Promise<Record<string, Buffer> | undefined> {
    const key = `${kind}/${name}`;
    let entry = this.#cache.get(key);
    if (!entry) {
      entry = this.#fetch(kind, name);
      this.#cache.set(key, entry);
    }
    return entry;
  }

  async #fetch(kind: 'secret' | 'configmap', name: string): Promise<Record<string, Buffer> | undefined> {
    const plural = kind === 'secret' ? 'secrets' : 'configmaps';
    try {
      const object = await this.#api.get<Secret & ConfigMap>(
        `/api/v1/namespaces/${this.#namespace}/${plural}/${name}`,
      );
      const data: Record<string, Buffer> = {};
      if (kind === 'secret') {
        for (const [k, v] of Object.entries(object.data ?? {})) data[k] = Buffer.from(v, 'base64');
      } else {
        for (const [k, v] of Object.entries(object.data ?? {})) data[k] = Buffer.from(v, 'utf8');
        for (const [k, v] of Object.entries(object.binaryData ?? {})) data[k] = Buffer.from(v, 'base64');
      }
      return data;
    } catch (error) {
      if (isKubeApiError(error, 404)) return undefined;
      throw error;
    }
  }
}

async function writeItems(
  dir: string,
  data: Record<string, Buffer>,
  items: KeyToPath[] | undefined,
  defaultMode: number,
  layout: PodLayout,
  describe: string,
): Promise<void> {
  const entries = items ?? Object.keys(data).map((key) => ({ key, path: key, mode: undefined }));
  for (const item of entries) {
    const content = data[item.key];
    if (content === undefined)
      throw new VolumeSetupError(`${describe}: references non-existent key ${item.key}`);
    const file = layout.inside(join(dir, item.path));
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, content, { mode: item.mode ?? defaultMode });
  }
}

/**
 * Creates the Pod's directories and materialises its volumes as plain files: Secret and ConfigMap
 * volumes get one file per key (or per `items` entry), emptyDir an empty directory. Other volume
 * types (hostPath, projected, …) also become empty directories: a local process cannot be given
 * the real thing without writing outside the work dir.
 */
export async function setUpVolumes(api: KubeApi, pod: Pod, layout: PodLayout, log: (line: string) => void) {
  const reader = new ObjectReader(api, pod.metadata.namespace ?? 'default');
  await mkdir(layout.tmp, { recursive: true });
  await mkdir(layout.home, { recursive: true });
  for (const volume of pod.spec.volumes ?? []) {
    const dir = layout.volume(volume.name);
    await mkdir(dir, { recursive: true });
    const source = volume.secret ?? volume.configMap;
    if (source) {
      const kind = volume.secret ? 'secret' : 'configmap';
      const name = volume.secret?.secretName ?? volume.configMap?.name ?? '';
      const describe = `MountVolume.SetUp failed for volume "${volume.name}"`;
      const data = await reader.read(kind, name);
      if (!data) {
        if (source.optional) continue;
        throw new VolumeSetupError(`${describe} : ${kind} "${name}" not found`);
      }
      await writeItems(dir, data, source.items, source.defaultMode ?? 0o644, layout, describe);
    } else if (!volume.emptyDir) {
      log(
        `pod ${pod.metadata.namespace}/${pod.metadata.name}: volume ${volume.name} is an empty directory here`,
      );
    }
  }
  for (const container of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    await mkdir(layout.containerDir(container.name), { recursive: true });
  }
}

const QUANTITY_SUFFIXES: Record<string, number> = {
  '': 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
};

/** A resource quantity ("512Mi", "250m", "2") as a number; NaN when it is not one of the common forms. */
export function parseQuantity(quantity: string): number {
  const match = /^([0-9.]+)([a-zA-Z]*)$/.exec(quantity.trim());
  const factor = match ? QUANTITY_SUFFIXES[match[2] ?? ''] : undefined;
  return match && factor !== undefined ? Number(match[1]) * factor : Number.NaN;
}

function fieldValue(pod: Pod, fieldPath: string, podIP: string): string {
  const labelOrAnnotation = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (labelOrAnnotation) {
    const map = labelOrAnnotation[1] === 'labels' ? pod.metadata.labels : pod.metadata.annotations;
    return map?.[labelOrAnnotation[2] ?? ''] ?? '';
  }
  switch (fieldPath) {
    case 'metadata.name':
      return pod.metadata.name;
    case 'metadata.namespace':
      return pod.metadata.namespace ?? 'default';
    case 'metadata.uid':
      return pod.metadata.uid ?? '';
    case 'spec.nodeName':
      return pod.spec.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec.serviceAccountName ?? '';
    case 'status.hostIP':
    case 'status.podIP':
    case 'status.podIPs':
      return podIP;
    default:
      throw new ContainerConfigError(`unsupported fieldRef ${fieldPath}`);
  }
}

function resourceValue(container: Container, resource: string, divisor?: string): string {
  const [kind, name] = resource.split('.') as ['limits' | 'requests', string];
  const declared = container.resources?.[kind]?.[name] ?? container.resources?.limits?.[name];
  // Like the kubelet: no limit means the node's allocatable.
  const fallback = name === 'cpu' ? String(availableParallelism()) : String(totalmem());
  const value = parseQuantity(declared ?? fallback);
  return String(Math.ceil(value / parseQuantity(divisor ?? '1')));
}

/** A container ready to spawn: argv, full environment, working directory. */
export interface ResolvedContainer {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
}

export interface ResolveInput {
  api: KubeApi;
  pod: Pod;
  container: Container;
  image: ImageSpec;
  layout: PodLayout;
  podIP: string;
  /** Variables every container gets first (PATH, KUBERNETES_SERVICE_HOST, …); the container's own win. */
  baseEnv: Record<string, string>;
}

/**
 * Builds a container's environment and argv as the kubelet does: base and image variables, then
 * `envFrom`, then `env` in order (each value may `$(REF)` the ones before), then command/args with
 * `$(REF)` expanded. In-container paths are mapped in literal values, ConfigMap values, command,
 * args and workingDir; Secret values and field references are passed through untouched.
 */
export async function resolveContainer(input: ResolveInput): Promise<ResolvedContainer> {
  const { api, pod, container, image, layout, podIP } = input;
  const namespace = pod.metadata.namespace ?? 'default';
  const reader = new ObjectReader(api, namespace);
  const map = pathMapper(containerPathMappings(container, layout));
  const env: Record<string, string> = {
    ...input.baseEnv,
    HOSTNAME: pod.metadata.name,
    HOME: layout.home,
    // Where /tmp really is: an emptyDir mounted at /tmp wins over the Pod's own tmp dir.
    TMPDIR: map('/tmp'),
    ...image.env,
  };

  for (const source of container.envFrom ?? []) {
    const ref = source.secretRef ?? source.configMapRef;
    if (!ref) continue;
    const kind = source.secretRef ? 'secret' : 'configmap';
    const data = await reader.read(kind, ref.name ?? '');
    if (!data) {
      if (ref.optional) continue;
      throw new ContainerConfigError(`${kind} "${ref.name}" not found`);
    }
    for (const [key, value] of Object.entries(data)) {
      const text = value.toString('utf8');
      env[`${source.prefix ?? ''}${key}`] = kind === 'secret' ? text : map(text);
    }
  }

  const lookup = (name: string) => env[name];
  for (const variable of container.env ?? []) {
    const from = variable.valueFrom;
    let value: string | undefined;
    if (from?.secretKeyRef || from?.configMapKeyRef) {
      const ref = (from.secretKeyRef ?? from.configMapKeyRef) as NonNullable<typeof from.secretKeyRef>;
      const kind = from.secretKeyRef ? 'secret' : 'configmap';
      const data = await reader.read(kind, ref.name ?? '');
      const content = data?.[ref.key];
      if (content === undefined) {
        if (ref.optional) continue;
        const kindName = kind === 'secret' ? 'Secret' : 'ConfigMap';
        throw new ContainerConfigError(
          data
            ? `couldn't find key ${ref.key} in ${kindName} ${namespace}/${ref.name}`
            : `${kind} "${ref.name}" not found`,
        );
      }
      value = kind === 'secret' ? content.toString('utf8') : map(content.toString('utf8'));
    } else if (from?.fieldRef) {
      value = fieldValue(pod, from.fieldRef.fieldPath, podIP);
    } else if (from?.resourceFieldRef) {
      value = resourceValue(container, from.resourceFieldRef.resource, from.resourceFieldRef.divisor);
    } else {
      value = expandVariables(map(variable.value ?? ''), lookup);
    }
    env[variable.name] = value;
  }

  const expand = (parts: string[]) => parts.map((part) => expandVariables(map(part), lookup));
  const argv = container.command?.length
    ? [...expand(container.command), ...expand(container.args ?? [])]
    : [...image.entrypoint, ...(container.args ? expand(container.args) : (image.cmd ?? []))];

  let cwd = image.workingDir ?? layout.root;
  if (container.workingDir) {
    cwd = map(container.workingDir);
    // A mapped working dir is ours to create, as the runtime creates a missing WORKDIR.
    if (cwd.startsWith(layout.root + sep)) await mkdir(layout.inside(cwd), { recursive: true });
  }
  return { argv, env, cwd };
}
