/**
 * A file name's media type from its extension. mime-types (and the ~200 KB database it parses) loads on
 * first use: most runs never ask, and a runner Pod would otherwise pay for it before its first step.
 */
import { lazyRequire } from './lazy-require.ts';

const loadMimeTypes = lazyRequire<typeof import('mime-types')>('mime-types');

/** The media type registered for the name's extension, or false when there is none. */
export function mediaTypeByName(filename: string): string | false {
  return loadMimeTypes().lookup(filename);
}
