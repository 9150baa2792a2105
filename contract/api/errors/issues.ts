/** Where a refused request's problems are: the issues of an error, and how its message names them. */

/** A path into a request, from its body's (or query's) root: `['steps', 0, 'config', 'transformCode']`. */
export type IssuePath = ReadonlyArray<string | number>;

/**
 * One problem of a refused request, where it is: the path of the field from the body's root and, for
 * JavaScript in a field, the line and column inside that code. Clients show each at its field (the
 * dashboard's forms and JSON editor) without reading the message, which may be reworded.
 */
export interface ErrorIssue {
  path: IssuePath;
  message: string;
  /** In the field's own text (a transform's source), 1-based. */
  line?: number;
  column?: number;
}

/** `steps[0].config.transformCode`: how messages name a path. */
export function formatIssuePath(path: IssuePath): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${part}` : part;
  }
  return out;
}

/** `path: message`, or the message alone for the root. */
export function formatIssue(issue: Pick<ErrorIssue, 'path' | 'message'>): string {
  const path = formatIssuePath(issue.path);
  return path ? `${path}: ${issue.message}` : issue.message;
}

/** The problems a refusal is raised with; a string is already formatted (docs/errors.md renders the templates with strings). */
export type IssueList = string | readonly (ErrorIssue | string)[];

/**
 * Issues as one message (`a: …; b[0]: …`); a string is already formatted (docs/errors.md renders the
 * templates with strings in place of every argument).
 */
export function listIssues(issues: IssueList): string {
  if (typeof issues === 'string') return issues;
  return issues.map((issue) => (typeof issue === 'string' ? issue : formatIssue(issue))).join('; ');
}

/** The structured issues of an argument that may hold them. */
export function structured(issues: IssueList): ErrorIssue[] | undefined {
  if (typeof issues === 'string') return undefined;
  const found = issues.filter((issue): issue is ErrorIssue => typeof issue !== 'string');
  return found.length > 0
    ? found.map(({ path, message, line, column }) => ({
        path,
        message,
        ...(line !== undefined ? { line } : {}),
        ...(column !== undefined ? { column } : {}),
      }))
    : undefined;
}
