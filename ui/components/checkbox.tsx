import type { ComponentChildren } from 'preact';

/** A checkbox and its text in one label, so that the text toggles it too. */
export function Checkbox(props: {
  checked: boolean;
  change(checked: boolean): void;
  children: ComponentChildren;
  class?: string;
  disabled?: boolean;
}) {
  return (
    <label class={props.class}>
      <input
        type="checkbox"
        checked={props.checked}
        disabled={props.disabled}
        onChange={(event) => props.change(event.currentTarget.checked)}
      />{' '}
      {props.children}
    </label>
  );
}
