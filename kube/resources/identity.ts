import { ResourceError, type WireObject } from './interface.ts';
import { qualifiedKind } from './kinds.ts';

type Identity = { kind: string; apiVersion: string };

/** The API server's 422 wording: `Tool.kubeglue.dev "x" is invalid: <field>: <problem>`. */
export function invalid(spec: Identity, name: string, message: string): ResourceError {
  return new ResourceError('Invalid', `${qualifiedKind(spec)} "${name}" is invalid: ${message}`);
}

/**
 * Kind, apiVersion and namespace must be the client's; returns the name. Checked before any I/O, so both
 * implementations refuse a misdirected object the same way (the API server would answer 400 for some).
 */
export function checkIdentity(obj: WireObject, spec: Identity, namespace: string): string {
  const name = obj.metadata?.name ?? '';
  if (!name) throw invalid(spec, name, 'metadata.name: Required value: name is required');
  if (obj.kind !== spec.kind || obj.apiVersion !== spec.apiVersion) {
    throw invalid(
      spec,
      name,
      `kind: Invalid value: "${obj.apiVersion}, Kind=${obj.kind}": must be ${spec.apiVersion}, Kind=${spec.kind}`,
    );
  }
  const objectNamespace = obj.metadata.namespace;
  if (objectNamespace !== undefined && objectNamespace !== namespace) {
    throw invalid(
      spec,
      name,
      `metadata.namespace: Invalid value: "${objectNamespace}": does not match the namespace of the request (${namespace})`,
    );
  }
  return name;
}

/** A create carries no resourceVersion (the API server would fail it with a 500). */
export function checkCreatable(obj: WireObject, spec: Identity, namespace: string): string {
  const name = checkIdentity(obj, spec, namespace);
  if (obj.metadata.resourceVersion) {
    throw invalid(
      spec,
      name,
      'metadata.resourceVersion: Invalid value: must be empty when creating an object',
    );
  }
  return name;
}

/** An update must say which version it replaces. */
export function checkUpdatable(obj: WireObject, spec: Identity, namespace: string): string {
  const name = checkIdentity(obj, spec, namespace);
  if (!obj.metadata.resourceVersion) {
    throw invalid(
      spec,
      name,
      'metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
    );
  }
  return name;
}
