import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { navigate, withQuery } from '../router.tsx';

/**
 * Previous / next buttons under a list, named for screen readers ("Pages of tools"). A missing handler
 * disables its button (first page, or nothing more to read); `position` sits between them ("Page 2 of 5").
 */
export function Pager(props: {
  label: string;
  previous?: () => void;
  next?: () => void;
  previousText?: string;
  nextText?: string;
  position?: ComponentChildren;
}) {
  return (
    <nav class="pager" aria-label={props.label}>
      <button type="button" class="secondary" disabled={!props.previous} onClick={props.previous}>
        {props.previousText ?? 'Previous page'}
      </button>
      {props.position !== undefined && <span>{props.position}</span>}
      <button type="button" class="secondary" disabled={!props.next} onClick={props.next}>
        {props.nextText ?? 'Next page'}
      </button>
    </nav>
  );
}

/** The page a numbered list shows, from its URL's `?page=` (1 when absent or not a page number). */
export function pageOf(query: URLSearchParams): number {
  return Math.max(1, Number(query.get('page')) || 1);
}

/**
 * The pager of a list numbered by pages and kept in the URL (tools, schedules, systems): previous and
 * next go to `path` with the list's own `query` and the page (none for page 1), as far as the API
 * says there is more.
 */
export function PageLinks(props: {
  label: string;
  path: string;
  query?: Record<string, string | undefined>;
  page: number;
  hasMore: boolean;
  position?: ComponentChildren;
}) {
  const { path, query, page } = props;
  const goTo = (target: number) =>
    navigate(withQuery(path, { ...query, page: target > 1 ? String(target) : undefined }));
  return (
    <Pager
      label={props.label}
      previous={page > 1 ? () => goTo(page - 1) : undefined}
      next={props.hasMore ? () => goTo(page + 1) : undefined}
      position={props.position}
    />
  );
}

/** How many rows of a long list are rendered: a page at first, then more on request (ShowMore). */
export interface ShownRows {
  shown: number;
  pageSize: number;
  show(count: number): void;
}

export function useShownRows(pageSize: number): ShownRows {
  const [shown, show] = useState(pageSize);
  return { shown, pageSize, show };
}

/**
 * Under a list that renders a page of its rows at a time (thousands at once would stall the tab): the
 * button that renders a page more ("Show 100 more keys"), while any of the `total` are not shown.
 */
export function ShowMore(props: {
  rows: ShownRows;
  total: number;
  /** What the rows are, after the count: "keys", "steps of 340". */
  what: string;
  class?: string;
}) {
  const { shown, pageSize, show } = props.rows;
  if (shown >= props.total) return null;
  return (
    <button type="button" class={props.class ?? 'secondary'} onClick={() => show(shown + pageSize)}>
      Show {Math.min(pageSize, props.total - shown)} more {props.what}
    </button>
  );
}
