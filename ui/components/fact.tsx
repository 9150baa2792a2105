import type { ComponentChildren } from 'preact';

/** One fact of a `<dl class="facts">`: what it is (`term`), then its value. */
export function Fact(props: { term: ComponentChildren; children: ComponentChildren }) {
  return (
    <>
      <dt>{props.term}</dt>
      <dd>{props.children}</dd>
    </>
  );
}
