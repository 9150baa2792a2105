import { SandboxError } from './errors.ts';

export interface CompileFailure {
  errorName: string;
  message: string;
  line?: number;
  column?: number;
}

/** isolated-vm appends `[<filename>:<line>:<column>]` to compile errors. */
const LOCATION = /\s*\[([^\]\n]*):(\d+):(\d+)\]\s*$/;

/**
 * Reads an isolated-vm compile error of a wrapped user source (see `wrapUserSource`). Positions that
 * fall on the wrapper's own lines (an unclosed bracket is reported where the wrapper closes) are
 * moved to the start or the end of the user's text.
 */
export function readCompileError(error: unknown, source: string): CompileFailure {
  const errorName = error instanceof Error && error.name ? error.name : 'SyntaxError';
  const raw = error instanceof Error ? error.message : String(error);
  const match = LOCATION.exec(raw);
  if (!match) return { errorName, message: raw };
  const message = raw.slice(0, match.index);
  const lines = source.split(/\r\n|\r|\n/);
  let line = Number(match[2]);
  let column = Number(match[3]);
  if (line < 1) {
    line = 1;
    column = 1;
  } else if (line > lines.length) {
    line = lines.length;
    column = (lines[lines.length - 1]?.length ?? 0) + 1;
  }
  return { errorName, message, line, column };
}

export function compileSandboxError(failure: CompileFailure, label: string | undefined): SandboxError {
  return new SandboxError('compile', failure.message, {
    label,
    errorName: failure.errorName,
    line: failure.line,
    column: failure.column,
  });
}
