import type ivm from 'isolated-vm';

const ignore = (): void => {};

/**
 * A context with the driver installed: the driver's `run` function, and the thunk of every user
 * source evaluated in it so far (a script compiled once per isolate is run once per context).
 * Releasing it releases the references too, which would otherwise keep the context alive.
 */
export class PreparedContext {
  readonly context: ivm.Context;
  readonly #run: Promise<ivm.Reference>;
  readonly #thunks = new Map<string, Promise<ivm.Reference>>();
  #released = false;

  private constructor(context: ivm.Context, run: Promise<ivm.Reference>) {
    this.context = context;
    this.#run = run;
  }

  /** A new context of `isolate`; the driver runs in it before anything else is queued on it. */
  static async create(isolate: ivm.Isolate, driver: Promise<ivm.Script>): Promise<PreparedContext> {
    const script = await driver;
    const context = await isolate.createContext();
    const run = script.run(context, { reference: true }) as Promise<ivm.Reference>;
    run.catch(ignore);
    return new PreparedContext(context, run);
  }

  /** The driver's `run` function. */
  runFunction(): Promise<ivm.Reference> {
    return this.#run;
  }

  /** The thunk of `source` in this context (running its compiled script runs no user code). */
  thunk(source: string, script: ivm.Script): Promise<ivm.Reference> {
    let thunk = this.#thunks.get(source);
    if (thunk === undefined) {
      thunk = script.run(this.context, { reference: true }) as Promise<ivm.Reference>;
      thunk.catch(ignore);
      this.#thunks.set(source, thunk);
    }
    return thunk;
  }

  get released(): boolean {
    return this.#released;
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    const references = [this.#run, ...this.#thunks.values()];
    this.#thunks.clear();
    for (const reference of references) reference.then(releaseQuietly, ignore);
    try {
      this.context.release();
    } catch {
      // The isolate is gone, and the context with it.
    }
  }
}

function releaseQuietly(reference: ivm.Reference): void {
  try {
    reference.release();
  } catch {
    // The isolate is gone, and the reference with it.
  }
}
