/**
 * The catalog's machinery: the error the API answers with, and `define` (or `defineRefusal`, for a code
 * raised with the problems field by field), which declares one code of an area (errors/<area>.ts) and
 * gives the function that raises it.
 */
import { type ErrorIssue, type IssueList, structured } from './issues.ts';

/** An error the API answers with; its message is safe to show to the client. */
export class ApiError extends Error {
  readonly code: string;
  readonly statusCode: number;
  /** Response headers that belong to the error (Retry-After, WWW-Authenticate). */
  readonly headers: Readonly<Record<string, string>>;
  /** What the client can do about it: the catalog's text, the same as docs/errors.md. */
  readonly hint: string | undefined;
  /** Each problem at its field, for the errors that refuse input field by field. */
  readonly issues: readonly ErrorIssue[] | undefined;

  constructor(
    code: string,
    statusCode: number,
    message: string,
    headers: Record<string, string> = {},
    hint?: string,
    issues?: readonly ErrorIssue[],
  ) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.statusCode = statusCode;
    this.headers = headers;
    this.hint = hint;
    this.issues = issues;
  }

  /** The `error` object of the answer's body: `{ message, code, hint, issues }`. */
  body(): { message: string; code: string; hint?: string; issues?: ErrorIssue[] } {
    return {
      message: this.message,
      code: this.code,
      ...(this.hint !== undefined ? { hint: this.hint } : {}),
      ...(this.issues !== undefined && this.issues.length > 0 ? { issues: [...this.issues] } : {}),
    };
  }
}

/** A catalog entry: call it with the template's arguments to get the error to throw. */
export interface ErrorDefinition<Args extends unknown[]> {
  (...args: Args): ApiError;
  readonly code: string;
  readonly statusCode: number;
}

export interface CatalogEntry {
  code: string;
  statusCode: number;
  /** The message for the raise's arguments (docs/errors.md renders it with the parameters' names). */
  message: (args: unknown[]) => string;
  /** The source of the message function: docs/errors.md names the template's parameters after it. */
  source: string;
  /** The headers the answer carries besides the body (Allow, Retry-After, WWW-Authenticate). */
  headers: (args: unknown[]) => Record<string, string>;
  /** What a client does about it: one or two sentences for docs/errors.md. */
  fix: string;
}

/** Every code declared in any area: a second declaration would give one code two meanings. */
const declared = new Set<string>();

/** One area of the catalog: its `define`, and its entries in the order it declares them. */
export interface ErrorArea {
  readonly entries: readonly CatalogEntry[];
  define<Args extends unknown[]>(
    code: string,
    statusCode: number,
    message: (...args: Args) => string,
    fix: string,
    headers?: Record<string, string> | ((...args: Args) => Record<string, string>),
  ): ErrorDefinition<Args>;
  /**
   * A code that refuses input field by field: the message's last argument is the problems, which the body
   * also carries one by one (`error.issues`), so a client can show each at its field.
   */
  defineRefusal<Args extends [...unknown[], IssueList]>(
    code: string,
    statusCode: number,
    message: (...args: Args) => string,
    fix: string,
  ): ErrorDefinition<Args>;
}

export function errorArea(): ErrorArea {
  const entries: CatalogEntry[] = [];
  // `define`, plus the problems field by field that `defineRefusal` takes from the last argument.
  const declare = <Args extends unknown[]>(
    code: string,
    statusCode: number,
    message: (...args: Args) => string,
    fix: string,
    headers?: Record<string, string> | ((...args: Args) => Record<string, string>),
    issues?: (...args: Args) => readonly ErrorIssue[] | undefined,
  ): ErrorDefinition<Args> => {
    // Refused when the module loads, whichever areas declare it.
    if (declared.has(code)) throw new Error(`error code ${code} is declared twice`);
    declared.add(code);
    const headersOf = (...args: Args) => (typeof headers === 'function' ? headers(...args) : headers);
    entries.push({
      code,
      statusCode,
      message: (args) => message(...(args as Args)),
      source: message.toString(),
      headers: (args) => headersOf(...(args as Args)) ?? {},
      fix,
    });
    const raise = (...args: Args) =>
      new ApiError(code, statusCode, message(...args), headersOf(...args), fix, issues?.(...args));
    return Object.assign(raise, { code, statusCode });
  };
  const defineRefusal: ErrorArea['defineRefusal'] = (code, statusCode, message, fix) =>
    declare(code, statusCode, message, fix, undefined, (...args) =>
      structured(args[args.length - 1] as IssueList),
    );
  return { entries, define: declare, defineRefusal };
}

/** Whether `error` was raised from this catalog entry. */
export function isApiError(error: unknown, definition?: { code: string }): error is ApiError {
  return error instanceof ApiError && (definition === undefined || error.code === definition.code);
}
