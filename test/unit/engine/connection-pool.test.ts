/**
 * The bounded pool of exclusive connections (engine/protocols/connection-pool.ts), on plain objects that
 * stand for connections: what it promises is its own bookkeeping (the Redis tests run it on real ones).
 */
import { describe, expect, it } from 'vitest';
import { ConnectionPool, type PooledConnection } from '../../../engine/protocols/connection-pool.ts';

class Connection implements PooledConnection {
  static opened = 0;
  readonly id = ++Connection.opened;
  closed = false;
  active = true;
  destroy(): void {
    this.closed = true;
  }
  setActive(active: boolean): void {
    this.active = active;
  }
}

const never = new Promise<never>(() => {});
const later = () => Date.now() + 10_000;

function pool(max: number, idleMs = 60_000) {
  const opened: Connection[] = [];
  const connections = new ConnectionPool<Connection>({
    max,
    idleMs,
    open: async () => {
      const connection = new Connection();
      opened.push(connection);
      return connection;
    },
  });
  return { connections, opened };
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}

describe('connection pool', () => {
  it('hands a released connection to the next lease, and marks it idle in between', async () => {
    const { connections } = pool(2);
    const first = await connections.lease(later(), never);
    connections.release(first, true);
    expect(first.active).toBe(false);
    const again = await connections.lease(later(), never);
    expect(again).toBe(first);
    expect(again.active).toBe(true);
    expect(connections.size).toBe(1);
  });

  it('opens at most max connections; a further lease waits for a release', async () => {
    const { connections, opened } = pool(2);
    const a = await connections.lease(later(), never);
    await connections.lease(later(), never);
    let third: Connection | undefined;
    const waiting = connections.lease(later(), never).then((connection) => {
      third = connection;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(third).toBeUndefined();
    expect(opened).toHaveLength(2);
    connections.release(a, true);
    await waiting;
    expect(third).toBe(a);
  });

  it('destroys a connection released as not reusable and opens a new one for the waiting lease', async () => {
    const { connections, opened } = pool(1);
    const a = await connections.lease(later(), never);
    const waiting = connections.lease(later(), never);
    connections.release(a, false);
    const b = await waiting;
    expect(a.closed).toBe(true);
    expect(b).not.toBe(a);
    expect(opened).toHaveLength(2);
    expect(connections.size).toBe(1);
  });

  it('gives up a wait when the step is stopped, and the connection then goes to no one', async () => {
    const { connections } = pool(1);
    const a = await connections.lease(later(), never);
    let stop: (error: Error) => void = () => {};
    const stopped = new Promise<never>((_, reject) => {
      stop = reject;
    });
    const waiting = connections.lease(later(), stopped);
    stop(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
    connections.release(a, true);
    expect(await connections.lease(later(), never)).toBe(a);
  });

  it('closes a connection idle for idleMs and forgets it', async () => {
    const { connections } = pool(2, 20);
    const a = await connections.lease(later(), never);
    connections.release(a, true);
    await until(() => a.closed);
    expect(connections.size).toBe(0);
    expect(await connections.lease(later(), never)).not.toBe(a);
  });

  it('does not lease a connection the server closed while it was idle', async () => {
    const { connections } = pool(2);
    const a = await connections.lease(later(), never);
    connections.release(a, true);
    a.closed = true;
    expect(await connections.lease(later(), never)).not.toBe(a);
    expect(connections.size).toBe(1);
  });
});
