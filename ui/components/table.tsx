import type { ComponentChildren } from 'preact';

/**
 * A table of rows with its caption (for screen readers only when the heading above says it) and its column
 * headings, in a wrapper that scrolls sideways when the screen is narrower than the table.
 */
export function Table(props: {
  class: string;
  caption: ComponentChildren;
  captionHidden?: boolean;
  columns: readonly string[];
  children: ComponentChildren;
}) {
  return (
    <div class="table-wrap">
      <table class={props.class}>
        <caption class={props.captionHidden ? 'visually-hidden' : undefined}>{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((column) => (
              <th key={column} scope="col">
                {column}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}
