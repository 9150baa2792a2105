/**
 * A CommonJS dependency loaded on its first use, synchronously. For libraries only some steps need
 * (output schemas, XML and CSV bodies): an engine worker that never meets them never pays their
 * resident memory.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export function lazyRequire<T>(id: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= require(id) as T;
    return loaded;
  };
}
