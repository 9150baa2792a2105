import { MANAGED_BY_LABEL } from '../../contract/resources/labels.ts';
import type { OwnerReference } from '../../contract/resources/meta.ts';
import { isResourceError, type ResourceClient } from '../resources/index.ts';
import type { Secret } from '../types.ts';
import { type SecretPutOptions, type SecretStore, SecretUnreadableError } from './interface.ts';

const MANAGER = 'kubeglue';
const MAX_WRITE_ATTEMPTS = 5;

function decode(name: string, secret: Secret): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(secret.data ?? {})) {
    if (typeof value !== 'string') throw new SecretUnreadableError(name, `key ${key} is not base64 text`);
    out[key] = Buffer.from(value, 'base64').toString('utf8');
  }
  return out;
}

function encode(data: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]),
  );
}

/**
 * Named sets of secret strings as Kubernetes Secrets in one namespace (the Kubernetes deployment's
 * SecretStore): the API server and its encryption at rest keep them, RBAC guards them. Secrets
 * written here carry `app.kubernetes.io/managed-by: kubeglue` and, when given, an ownerReference
 * (a System's credentials go away with the System).
 */
export class ClusterSecretStore implements SecretStore {
  readonly #secrets: ResourceClient<Secret>;
  readonly #namespace: string;

  constructor(options: { secrets: ResourceClient<Secret>; namespace: string }) {
    this.#secrets = options.secrets;
    this.#namespace = options.namespace;
  }

  async get(name: string): Promise<Record<string, string> | undefined> {
    const secret = await this.#secrets.get(name);
    return secret ? decode(name, secret) : undefined;
  }

  async put(name: string, data: Record<string, string>, options: SecretPutOptions = {}): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.#secrets.get(name);
      try {
        if (!current) {
          await this.#secrets.create(this.#object(name, data, options.owner));
        } else {
          await this.#secrets.update({
            ...this.#object(name, data, options.owner ?? current.metadata.ownerReferences?.[0]),
            metadata: {
              ...current.metadata,
              labels: { ...current.metadata.labels, [MANAGED_BY_LABEL]: MANAGER },
              ...(options.owner ? { ownerReferences: [options.owner] } : {}),
            },
          });
        }
        return;
      } catch (error) {
        // Another writer got there between our read and write: read again and replace.
        const raced = isResourceError(error, 'Conflict') || isResourceError(error, 'AlreadyExists');
        if (!raced || attempt >= MAX_WRITE_ATTEMPTS) throw error;
      }
    }
  }

  async delete(name: string): Promise<void> {
    try {
      await this.#secrets.delete(name);
    } catch (error) {
      if (!isResourceError(error, 'NotFound')) throw error;
    }
  }

  #object(name: string, data: Record<string, string>, owner: OwnerReference | undefined): Secret {
    return {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name,
        namespace: this.#namespace,
        labels: { [MANAGED_BY_LABEL]: MANAGER },
        ...(owner ? { ownerReferences: [owner] } : {}),
      },
      type: 'Opaque',
      data: encode(data),
    };
  }
}
