/** What the tests ask of the operating system: a free port, whether a process lives. */
import { createServer } from 'node:net';

/** A TCP port on 127.0.0.1 that was free a moment ago (the OS picked it; nothing holds it now). */
export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Whether a process with this id exists (one of another user's counts: signalling it is refused). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
