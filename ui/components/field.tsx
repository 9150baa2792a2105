import type { ComponentChildren } from 'preact';

/**
 * A form field: its label, naming the control `id` (which the children render), above the control and
 * whatever is said under it (a note, the field's problems).
 */
export function LabelledField(props: {
  id: string;
  label: ComponentChildren;
  class?: string;
  children: ComponentChildren;
}) {
  return (
    <div class={props.class ? `field ${props.class}` : 'field'}>
      <label for={props.id}>{props.label}</label>
      {props.children}
    </div>
  );
}
