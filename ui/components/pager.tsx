import type { ComponentChildren } from 'preact';
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
