/**
 * A bounded pool of exclusive connections to one server with one set of credentials, for clients that have
 * no pool of their own (ioredis). A step leases a connection for its whole duration (a blocking command or a
 * transaction holds it), so at most `max` steps of a process talk to that server at once and later ones wait
 * their turn, within their own deadline. A connection idle for `idleMs` is closed, and while idle it does not
 * keep the process alive. A connection that may hold state of its step (it failed mid-reply, it was
 * cancelled) is destroyed instead of being handed back.
 */

export interface PooledConnection {
  /** Closes the connection at once. */
  destroy(): void;
  /** Whether the connection may keep the process alive (false while idle). */
  setActive(active: boolean): void;
  /** Whether the connection died on its own (the server closed it). */
  readonly closed: boolean;
}

export interface ConnectionPoolOptions<C extends PooledConnection> {
  max: number;
  idleMs: number;
  /** Opens a connection; must give up by `deadline` (epoch ms). */
  open(deadline: number): Promise<C>;
}

interface Waiter<C> {
  resolve(connection: C): void;
  reject(error: unknown): void;
  deadline: number;
}

interface Idle<C> {
  connection: C;
  timer: NodeJS.Timeout;
}

export class ConnectionPool<C extends PooledConnection> {
  readonly #options: ConnectionPoolOptions<C>;
  /** Most recently used last: a lease takes the warmest connection. */
  readonly #idle: Idle<C>[] = [];
  readonly #waiters: Waiter<C>[] = [];
  /** Connections open or being opened, leased or idle. */
  #count = 0;
  #closed = false;

  constructor(options: ConnectionPoolOptions<C>) {
    this.#options = options;
  }

  /** Connections open or being opened. */
  get size(): number {
    return this.#count;
  }

  /**
   * A connection for the caller alone until `release`. Waits for one when `max` are leased; `stopped`
   * rejects the wait (the step's watchdog: cancellation or the deadline).
   */
  async lease(deadline: number, stopped: Promise<never>): Promise<C> {
    if (this.#closed) throw new Error('the connection pool is closed');
    for (let idle = this.#idle.pop(); idle; idle = this.#idle.pop()) {
      clearTimeout(idle.timer);
      if (idle.connection.closed) {
        this.#forget(idle.connection);
        continue;
      }
      idle.connection.setActive(true);
      return idle.connection;
    }
    if (this.#count < this.#options.max) return this.#open(deadline, stopped);
    let waiter: Waiter<C> | undefined;
    const waiting = new Promise<C>((resolve, reject) => {
      waiter = { resolve, reject, deadline };
      this.#waiters.push(waiter);
    });
    try {
      return await Promise.race([waiting, stopped]);
    } catch (error) {
      const index = waiter ? this.#waiters.indexOf(waiter) : -1;
      if (index >= 0) this.#waiters.splice(index, 1);
      // A connection handed over after the caller gave up goes back.
      waiting.then((late) => this.release(late, true)).catch(() => {});
      throw error;
    }
  }

  /** Gives the connection back; `reusable: false` destroys it (it may hold state of the step). */
  release(connection: C, reusable: boolean): void {
    if (!reusable || connection.closed || this.#closed) {
      connection.destroy();
      this.#forget(connection);
      return;
    }
    const waiter = this.#waiters.shift();
    if (waiter) {
      waiter.resolve(connection);
      return;
    }
    connection.setActive(false);
    const timer = setTimeout(() => {
      const index = this.#idle.findIndex((idle) => idle.connection === connection);
      if (index >= 0) this.#idle.splice(index, 1);
      connection.destroy();
      this.#forget(connection);
    }, this.#options.idleMs);
    timer.unref();
    this.#idle.push({ connection, timer });
  }

  /** Closes the idle connections now and every leased one when it comes back. */
  close(): void {
    this.#closed = true;
    for (const idle of this.#idle.splice(0)) {
      clearTimeout(idle.timer);
      idle.connection.destroy();
      this.#count--;
    }
    for (const waiter of this.#waiters.splice(0)) waiter.reject(new Error('the connection pool is closed'));
  }

  async #open(deadline: number, stopped: Promise<never>): Promise<C> {
    this.#count++;
    const opening = this.#options.open(deadline);
    try {
      return await Promise.race([opening, stopped]);
    } catch (error) {
      // A connection that opens after the caller gave up is not wanted by anyone yet.
      opening.then((late) => this.release(late, true)).catch(() => this.#forget(undefined));
      throw error;
    }
  }

  /** A connection is gone: its place goes to the next waiter, who opens a new one. */
  #forget(_connection: C | undefined): void {
    this.#count--;
    const waiter = this.#waiters.shift();
    if (!waiter || this.#closed) return;
    this.#count++;
    this.#options.open(waiter.deadline).then(waiter.resolve, (error: unknown) => {
      this.#count--;
      waiter.reject(error);
    });
  }
}
