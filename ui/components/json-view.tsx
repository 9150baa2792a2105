/**
 * A JSON value shown two levels deep, the rest collapsed: objects and arrays open one level at a time, one
 * page of a hundred entries, long strings in pieces; a search box finds keys and values anywhere
 * (json-search.ts) and reveals the match. Nothing renders more than a page of a level at once, so a 10 MB
 * result never freezes the tab.
 */
import { createContext } from 'preact';
import { useContext, useEffect, useId, useRef, useState } from 'preact/hooks';
import { formatBytes, formatCount } from './format.ts';
import { type JsonMatch, type JsonPath, pathText, searchJson } from './json-search.ts';

const PAGE = 100;
const STRING_PIECE = 2_000;
/**
 * The levels open at first: the value and its entries, so `{ "data": [ {…} ] }` shows its item. The
 * second opens only when all it shows fits in a page (PAGE entries), so that a hundred objects of a
 * hundred keys stay a hundred rows.
 */
const OPEN_LEVELS = 2;

/** The path being revealed (a search match), shared by every node of one view. */
const Reveal = createContext<JsonPath | null>(null);

function startsWith(path: JsonPath, prefix: JsonPath): boolean {
  return prefix.length <= path.length && prefix.every((part, i) => part === path[i]);
}

function samePath(a: JsonPath, b: JsonPath | null): boolean {
  return b !== null && a.length === b.length && startsWith(a, b);
}

function LongString({ text }: { text: string }) {
  const [shown, setShown] = useState(Math.min(text.length, STRING_PIECE / 4));
  return (
    <span class="json-string">
      "{text.slice(0, shown)}
      {shown < text.length ? (
        <>
          …"{' '}
          <button type="button" class="link-button" onClick={() => setShown(shown + STRING_PIECE)}>
            show more ({(text.length - shown).toLocaleString()} more characters)
          </button>
        </>
      ) : (
        '"'
      )}
    </span>
  );
}

function Scalar({ value }: { value: unknown }) {
  if (typeof value === 'string') {
    if (value.length > STRING_PIECE / 4) return <LongString text={value} />;
    return <span class="json-string">"{value}"</span>;
  }
  if (value === null) return <span class="json-null">null</span>;
  if (typeof value === 'number') return <span class="json-number">{String(value)}</span>;
  if (typeof value === 'boolean') return <span class="json-boolean">{String(value)}</span>;
  return <span class="json-null">{String(value)}</span>;
}

function Key({ name }: { name: string | number | undefined }) {
  if (name === undefined) return null;
  return <span class="json-key">{typeof name === 'number' ? name : JSON.stringify(name)}: </span>;
}

interface NodeProps {
  name?: string | number;
  value: unknown;
  path: JsonPath;
  open?: boolean;
}

/** How many entries an object or array has (0 for anything else). */
function entriesOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  return Array.isArray(value) ? value.length : Object.keys(value).length;
}

function JsonNode({ name, value, path, open: openAtFirst = false }: NodeProps) {
  const reveal = useContext(Reveal);
  const onRevealPath = reveal !== null && reveal.length > path.length && startsWith(reveal, path);
  const isMatch = samePath(path, reveal);
  const [open, setOpen] = useState(openAtFirst);
  /** The first entry of the page shown: a level shows one page of PAGE entries at a time. */
  const [start, setStart] = useState(0);
  const ref = useRef<HTMLLIElement>(null);
  const container = value !== null && typeof value === 'object';
  const keys = container && !Array.isArray(value) ? Object.keys(value) : undefined;
  const entries = container ? (keys ? keys.length : (value as unknown[]).length) : 0;

  useEffect(() => {
    if (!onRevealPath) return;
    const next = reveal[path.length];
    const index = keys ? keys.indexOf(String(next)) : typeof next === 'number' ? next : -1;
    setOpen(true);
    if (index >= 0) setStart(Math.floor(index / PAGE) * PAGE);
  }, [reveal]);
  useEffect(() => {
    if (isMatch) ref.current?.scrollIntoView({ block: 'center' });
  }, [reveal]);

  if (!container) {
    return (
      <li ref={ref} class={isMatch ? 'json-match' : undefined}>
        <Key name={name} />
        <Scalar value={value} />
      </li>
    );
  }
  const unit = keys ? 'key' : 'item';
  const summary = keys ? `{ ${formatCount(entries, unit)} }` : `[ ${formatCount(entries, unit)} ]`;
  const end = Math.min(entries, start + PAGE);
  const shown: [string | number, unknown][] = [];
  for (let i = start; i < end; i++) {
    const key = keys ? (keys[i] as string) : i;
    shown.push([key, (value as Record<string | number, unknown>)[key]]);
  }
  const openChildren =
    path.length < OPEN_LEVELS - 1 &&
    shown.reduce((rows, [, child]) => rows + Math.min(entriesOf(child), PAGE), 0) <= PAGE;
  return (
    <li ref={ref} class={isMatch ? 'json-match' : undefined}>
      <button type="button" class="json-toggle" aria-expanded={open} onClick={() => setOpen(!open)}>
        <span aria-hidden="true">{open ? '▾' : '▸'}</span> <Key name={name} />
        <span class="json-summary">{summary}</span>
      </button>
      {open && entries > 0 && (
        <ul class="json-children">
          {shown.map(([key, child]) => (
            <JsonNode key={key} name={key} value={child} path={[...path, key]} open={openChildren} />
          ))}
          {entries > PAGE && (
            <li class="json-pager">
              <span class="muted">
                {(start + 1).toLocaleString()}–{end.toLocaleString()} of {entries.toLocaleString()}
              </span>{' '}
              <button
                type="button"
                class="link-button"
                disabled={start === 0}
                onClick={() => setStart(start - PAGE)}
              >
                Previous {formatCount(PAGE, unit)}
              </button>{' '}
              <button
                type="button"
                class="link-button"
                disabled={end >= entries}
                onClick={() => setStart(end)}
              >
                Next {formatCount(Math.min(PAGE, entries - end) || PAGE, unit)}
              </button>
            </li>
          )}
        </ul>
      )}
    </li>
  );
}

export interface JsonViewProps {
  value: unknown;
  /** What the value is ("Output", "Inputs"): names the search box. */
  label: string;
  /** Bytes of the value as JSON when known (shown beside the label). */
  size?: number;
}

export function JsonView({ value, label, size }: JsonViewProps) {
  const searchId = useId();
  const [query, setQuery] = useState('');
  const [results, setResults] = useState<{ matches: JsonMatch[]; complete: boolean; searching: boolean }>();
  const [reveal, setReveal] = useState<JsonPath | null>(null);

  useEffect(() => {
    if (query.trim().length === 0) {
      setResults(undefined);
      return;
    }
    const abort = new AbortController();
    setResults({ matches: [], complete: false, searching: true });
    const timer = setTimeout(() => {
      void searchJson(value, query.trim(), { signal: abort.signal }).then((found) => {
        if (!abort.signal.aborted) setResults({ ...found, searching: false });
      });
    }, 200);
    return () => {
      clearTimeout(timer);
      abort.abort();
    };
  }, [query, value]);

  const container = value !== null && typeof value === 'object';
  return (
    <div class="json-view">
      {container && (
        <div class="json-search">
          <label for={searchId}>Search {label.toLowerCase()}</label>
          <input
            id={searchId}
            type="search"
            value={query}
            onInput={(event) => setQuery(event.currentTarget.value)}
            placeholder="key or value"
          />
          {size !== undefined && <span class="muted">{formatBytes(size)}</span>}
          {results && (
            <p class="muted" role="status">
              {results.searching
                ? 'Searching…'
                : `${results.matches.length}${results.complete ? '' : '+'} match${results.matches.length === 1 ? '' : 'es'}`}
            </p>
          )}
          {results && results.matches.length > 0 && (
            <ul class="json-matches">
              {results.matches.map((match) => (
                <li key={pathText(match.path)}>
                  <button type="button" class="link-button" onClick={() => setReveal(match.path)}>
                    {pathText(match.path)}
                  </button>{' '}
                  <span class="muted">{match.preview}</span>
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      <Reveal.Provider value={reveal}>
        <ul class="json-tree">
          <JsonNode value={value} path={[]} open />
        </ul>
      </Reveal.Provider>
    </div>
  );
}
