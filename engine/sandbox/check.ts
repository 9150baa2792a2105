import ivm from 'isolated-vm';
import { readCompileError } from './compile-error.ts';
import { EMPTY_SOURCE_MESSAGE, normalizeSource, USER_FILENAME, wrapUserSource } from './driver.ts';
import { formatSandboxMessage } from './errors.ts';
import { checkFunctionShape } from './function-shape.ts';

export type CheckResult = { ok: true } | { ok: false; message: string; line?: number; column?: number };

/** Parsing needs little memory; a source this large is refused by the API long before. */
const CHECK_MEMORY_LIMIT_MB = 32;

/**
 * Save-time validation: compiles the source in a small isolate of its own (so a check never waits
 * behind evaluations) and checks statically that it is a function expression. Nothing is run.
 */
export class SourceChecker {
  #isolate: ivm.Isolate | undefined;

  check(source: string, label?: string): CheckResult {
    const normalized = normalizeSource(source);
    if (normalized.trim() === '')
      return { ok: false, message: formatSandboxMessage(EMPTY_SOURCE_MESSAGE, { label }) };
    try {
      const script = this.#ensureIsolate().compileScriptSync(wrapUserSource(source), {
        filename: USER_FILENAME,
        lineOffset: -1,
      });
      script.release();
    } catch (error) {
      if (this.#isolate?.isDisposed) this.#isolate = undefined;
      const failure = readCompileError(error, normalized);
      return {
        ok: false,
        message: formatSandboxMessage(failure.message, {
          label,
          errorName: failure.errorName,
          line: failure.line,
          column: failure.column,
        }),
        ...(failure.line !== undefined ? { line: failure.line } : {}),
        ...(failure.column !== undefined ? { column: failure.column } : {}),
      };
    }
    const shape = checkFunctionShape(normalized);
    if (!shape.ok) return { ok: false, message: formatSandboxMessage(shape.message, { label }) };
    return { ok: true };
  }

  dispose(): void {
    if (this.#isolate && !this.#isolate.isDisposed) this.#isolate.dispose();
    this.#isolate = undefined;
  }

  #ensureIsolate(): ivm.Isolate {
    if (!this.#isolate || this.#isolate.isDisposed) {
      this.#isolate = new ivm.Isolate({ memoryLimit: CHECK_MEMORY_LIMIT_MB });
    }
    return this.#isolate;
  }
}
