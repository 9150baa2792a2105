/**
 * The response decoding of every agent (http.ts, gateway-http.ts): undici's decompress interceptor
 * decodes gzip, deflate, br and zstd bodies as they stream (error bodies too: their text goes into the
 * step's error message), so the response limits count decoded bytes.
 *
 * undici 8 announces the interceptor with Node's "ExperimentalWarning: DecompressInterceptor is
 * experimental" once per process, when it is first created. That plain-text line landed in every runner
 * Pod's log and every engine worker's, where it is noise: the version is pinned by the lockfile and its
 * behaviour covered by our tests. So the one interceptor is created here, once, and exactly that warning
 * is dropped while it is created; any other warning, experimental or not, is still emitted. (The engine
 * workers used to start with --disable-warning=ExperimentalWarning, which hid every experimental warning.)
 * When undici stops announcing it, this wrapper can go.
 */
import { type Dispatcher, interceptors } from 'undici';

const ANNOUNCEMENT = /^DecompressInterceptor is experimental/;

function withoutAnnouncement<T>(create: () => T): T {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const message = typeof warning === 'string' ? warning : warning.message;
    if (ANNOUNCEMENT.test(message)) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return create();
  } finally {
    process.emitWarning = emitWarning;
  }
}

/** Decodes compressed responses, error responses included. */
export const decompress: Dispatcher.DispatcherComposeInterceptor = withoutAnnouncement(() =>
  interceptors.decompress({ skipErrorResponses: false }),
);
