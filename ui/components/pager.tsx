import type { ComponentChildren } from 'preact';

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
