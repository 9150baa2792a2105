/**
 * A JSON text editor: a plain textarea (the browser's own editing, undo and accessibility) with line
 * numbers beside it, each problem marked at its line in the numbers and listed under the editor, where a
 * button puts the caret on it. Problems are given as issues by path (the API's `error.issues`) and placed
 * in the text as it is now, so a marker follows its field while the user edits around it.
 */
import { useMemo, useRef, useState } from 'preact/hooks';
import { locateValue, offsetInString, parseErrorOffset, positionAt } from './json-locate.ts';
import { type JsonPath, pathText } from './json-search.ts';

/** A problem of the text: where (a path in the JSON, and a line and column inside a string's code). */
export interface EditorIssue {
  path: Readonly<JsonPath>;
  message: string;
  line?: number | undefined;
  column?: number | undefined;
}

interface Placed {
  key: string;
  /** Where in the text: undefined when the text does not reach it (it no longer parses). */
  offset: number | undefined;
  text: string;
}

/** Each issue at its place in the text; the code's own line when it is inside a string. */
function place(text: string, issues: readonly EditorIssue[]): Placed[] {
  return issues.map((issue, index) => {
    const located = locateValue(text, issue.path);
    const field = issue.path.length > 0 ? `${pathText(issue.path)}: ` : '';
    let offset = located?.offset;
    let inCode = '';
    if (located && issue.line !== undefined && located.valueOffset !== undefined) {
      if (text[located.valueOffset] === '"') {
        offset = offsetInString(text, located.valueOffset, issue.line, issue.column ?? 1);
        // The server's message usually says it already; the structured position is what counts.
        if (!issue.message.includes(`line ${issue.line}`)) {
          inCode = ` (line ${issue.line}${issue.column !== undefined ? `, column ${issue.column}` : ''} of the code)`;
        }
      }
    }
    return { key: `${index}`, offset, text: `${field}${issue.message}${inCode}` };
  });
}

/** The problem of a text that is not JSON, at the place JSON.parse stopped; undefined when it parses. */
export function jsonSyntaxIssue(text: string): { offset: number | undefined; message: string } | undefined {
  try {
    JSON.parse(text);
    return undefined;
  } catch (error) {
    return {
      offset: parseErrorOffset(text, error),
      message: `not valid JSON: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
}

/**
 * The problems a JsonEditor whose text is a JSON object to send shows: the text's own, found before
 * sending, and the server's issues. `readObject(text, notObject)` answers the object, or undefined with
 * why not marked in the editor: where the JSON stops parsing, or `notObject` when it is not an object.
 */
export function useEditorProblems() {
  const [syntax, setSyntax] = useState<ReturnType<typeof jsonSyntaxIssue>>();
  const [issues, setIssues] = useState<readonly EditorIssue[]>([]);
  const readObject = (text: string, notObject: string): Record<string, unknown> | undefined => {
    const problem = jsonSyntaxIssue(text);
    setSyntax(problem);
    if (problem) return undefined;
    const value = JSON.parse(text) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      setSyntax({ offset: 0, message: notObject });
      return undefined;
    }
    return value as Record<string, unknown>;
  };
  return { syntax, issues, setIssues, readObject };
}

interface JsonEditorProps {
  id: string;
  label: string;
  value: string;
  onInput: (value: string) => void;
  issues: readonly EditorIssue[];
  /** A syntax problem found before sending (jsonSyntaxIssue). */
  syntax?: { offset: number | undefined; message: string } | undefined;
  rows?: number;
}

export function JsonEditor({ id, label, value, onInput, issues, syntax, rows = 24 }: JsonEditorProps) {
  const area = useRef<HTMLTextAreaElement>(null);
  const gutter = useRef<HTMLDivElement>(null);
  const problemsId = `${id}-problems`;

  const placed = useMemo(() => {
    const all = place(value, issues);
    if (syntax) all.unshift({ key: 'syntax', offset: syntax.offset, text: syntax.message });
    return all.map((problem) => ({
      ...problem,
      position: problem.offset !== undefined ? positionAt(value, problem.offset) : undefined,
    }));
  }, [value, issues, syntax]);

  const lineCount = useMemo(() => value.split('\n').length, [value]);
  const markedLines = placed.flatMap((problem) => (problem.position ? [problem.position.line] : []));
  const markedKey = [...new Set(markedLines)].sort((a, b) => a - b).join(',');
  const numbers = useMemo(() => {
    const marked = new Set(markedLines);
    return Array.from({ length: lineCount }, (_, index) => {
      const line = index + 1;
      return marked.has(line) ? (
        <div key={line} class="gutter-line gutter-problem">
          <span class="gutter-mark">✕</span>
          {line}
        </div>
      ) : (
        <div key={line} class="gutter-line">
          {line}
        </div>
      );
    });
  }, [lineCount, markedKey]);

  const follow = () => {
    if (gutter.current && area.current) gutter.current.scrollTop = area.current.scrollTop;
  };
  const goTo = (offset: number) => {
    const textarea = area.current;
    if (!textarea) return;
    textarea.focus();
    textarea.setSelectionRange(offset, offset);
    const lineHeight = Number.parseFloat(getComputedStyle(textarea).lineHeight) || 20;
    const line = positionAt(textarea.value, offset).line;
    textarea.scrollTop = Math.max(0, (line - 1) * lineHeight - textarea.clientHeight / 3);
    follow();
  };

  return (
    <div class="json-editor">
      <label for={id}>{label}</label>
      <div class="json-editor-frame">
        <div class="json-editor-gutter" ref={gutter} aria-hidden="true">
          {numbers}
        </div>
        <textarea
          id={id}
          ref={area}
          class="json-editor-text"
          rows={rows}
          wrap="off"
          spellcheck={false}
          autocomplete="off"
          autocapitalize="off"
          value={value}
          aria-invalid={placed.length > 0 ? 'true' : undefined}
          aria-describedby={placed.length > 0 ? problemsId : undefined}
          onInput={(event) => onInput(event.currentTarget.value)}
          onScroll={follow}
        />
      </div>
      {placed.length > 0 && (
        <ol class="json-editor-problems" id={problemsId} aria-label={`Problems in ${label}`}>
          {placed.map((problem) => (
            <li key={problem.key}>
              {problem.position && problem.offset !== undefined ? (
                <button type="button" class="link-button" onClick={() => goTo(problem.offset as number)}>
                  Line {problem.position.line}, column {problem.position.column}
                </button>
              ) : (
                <span>Somewhere</span>
              )}
              : {problem.text}
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}
