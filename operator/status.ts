import type { Informer } from '../kube/informer.ts';
import {
  isResourceError,
  type ResourceClient,
  type StatusPatch,
  type WireObject,
} from '../kube/resources/index.ts';

/** The precondition of a write decided from `object`: a newer version of it makes the write a Conflict. */
export function versionOf(object: WireObject): { resourceVersion?: string } {
  const version = object.metadata.resourceVersion;
  return version ? { resourceVersion: version } : {};
}

/**
 * Writes a status patch decided from `object`, to that version only (a newer object is decided again: the
 * Conflict requeues it), and shows the informer what was written. An object deleted meanwhile is let go.
 * The object as written, or undefined when it was gone.
 */
export async function writeDecidedStatus<T extends WireObject>(
  client: Pick<ResourceClient<T>, 'patchStatus'>,
  informer: Pick<Informer<T>, 'observe'>,
  object: T,
  patch: StatusPatch<T>,
): Promise<T | undefined> {
  try {
    const written = await client.patchStatus(object.metadata.name, patch, versionOf(object));
    informer.observe('MODIFIED', written);
    return written;
  } catch (error) {
    if (!isResourceError(error, 'NotFound')) throw error;
    return undefined;
  }
}
