import type { ComponentChildren } from 'preact';

/** A column heading; `{ hidden }` is read to screen readers only (an actions column). */
export type Column = string | { hidden: string };

/**
 * A table of rows with its caption (for screen readers only when the heading above says it) and its column
 * headings, in a wrapper that scrolls sideways when the screen is narrower than the table. A table with no
 * link or button in it passes `scrollLabel`: its wrapper then takes keyboard focus under that name, or a
 * keyboard user could not scroll it (axe: scrollable-region-focusable).
 */
export function Table(props: {
  class: string;
  caption: ComponentChildren;
  captionHidden?: boolean;
  columns: readonly Column[];
  scrollLabel?: string;
  children: ComponentChildren;
}) {
  const table = (
    <table class={props.class}>
      <caption class={props.captionHidden ? 'visually-hidden' : undefined}>{props.caption}</caption>
      <thead>
        <tr>
          {props.columns.map((column) =>
            typeof column === 'string' ? (
              <th key={column} scope="col">
                {column}
              </th>
            ) : (
              <th key={column.hidden} scope="col">
                <span class="visually-hidden">{column.hidden}</span>
              </th>
            ),
          )}
        </tr>
      </thead>
      <tbody>{props.children}</tbody>
    </table>
  );
  if (props.scrollLabel === undefined) return <div class="table-wrap">{table}</div>;
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: see scrollLabel above
    <section class="table-wrap" tabIndex={0} aria-label={props.scrollLabel}>
      {table}
    </section>
  );
}
