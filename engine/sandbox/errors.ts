/**
 * How a sandbox evaluation failed:
 * - `compile`: the source does not parse, or does not evaluate to a function;
 * - `runtime`: the function threw (or rejected), or returned something that is not JSON;
 * - `timeout`: the CPU timeout expired, or a returned promise did not settle in time;
 * - `memory`: the isolate went past its memory limit and was discarded;
 * - `aborted`: the caller's AbortSignal fired, or the sandbox was disposed.
 */
export type SandboxErrorKind = 'compile' | 'runtime' | 'timeout' | 'memory' | 'aborted';

export interface SandboxErrorDetails {
  /** Where the source comes from, e.g. `step fetchUsers transformCode`; prefixes the message. */
  label?: string | undefined;
  /** The JavaScript error name (`SyntaxError`, `TypeError`, …) when there is one. */
  errorName?: string | undefined;
  /** 1-based line and column within the user's source. */
  line?: number | undefined;
  column?: number | undefined;
}

export class SandboxError extends Error {
  readonly kind: SandboxErrorKind;
  readonly label: string | undefined;
  readonly errorName: string | undefined;
  readonly line: number | undefined;
  readonly column: number | undefined;
  /** The message without the label and location, e.g. `Unexpected token ';'`. */
  readonly detail: string;

  constructor(kind: SandboxErrorKind, detail: string, details: SandboxErrorDetails = {}) {
    super(formatSandboxMessage(detail, details));
    this.name = 'SandboxError';
    this.kind = kind;
    this.detail = detail;
    this.label = details.label;
    this.errorName = details.errorName;
    this.line = details.line;
    this.column = details.column;
  }
}

/** `step x transformCode: TypeError at line 2, column 5: Cannot read properties of undefined`. */
export function formatSandboxMessage(detail: string, details: SandboxErrorDetails): string {
  const location =
    details.line !== undefined
      ? ` at line ${details.line}${details.column !== undefined ? `, column ${details.column}` : ''}`
      : '';
  const head = `${details.errorName ?? ''}${location}`.trim();
  const body = head ? `${head}: ${detail}` : detail;
  return details.label ? `${details.label}: ${body}` : body;
}
