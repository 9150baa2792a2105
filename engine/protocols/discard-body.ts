/**
 * Dropping a response body that will not be read (a redirect, an error status, a declared size above the
 * limit). undici's body stream, destroyed before its end without an error of its own, emits 'error'
 * (RequestAbortedError); with no listener on the stream that is an uncaught exception, which ends the
 * process. The listener added here takes that error: nobody is waiting for the body any more.
 */
export function discardBody(body: {
  destroy(): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
}): void {
  body.on('error', ignore);
  body.destroy();
}

function ignore(): void {}
