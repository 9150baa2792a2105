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

/** One option of a `ChoiceField`: the value it sends and the text it shows. */
export interface Choice {
  value: string;
  text: string;
}

/**
 * A labelled select of `choices`, `none` first for the empty value. With `keep`, a value that is not among
 * the choices (a stored gateway that is not connected now, a folder in the address that holds no tool)
 * still shows as chosen, last, as `keep` names it, instead of the select silently showing another.
 */
export function ChoiceField(props: {
  id: string;
  label: ComponentChildren;
  value: string;
  choices: readonly Choice[];
  none?: string;
  keep?: (value: string) => string;
  required?: boolean;
  change(value: string): void;
}) {
  const { id, label, value, choices, none, keep, required, change } = props;
  const stranger = keep && value !== '' && !choices.some((choice) => choice.value === value);
  return (
    <LabelledField id={id} label={label}>
      <select
        id={id}
        required={required}
        value={value}
        onChange={(event) => change(event.currentTarget.value)}
      >
        {none !== undefined && <option value="">{none}</option>}
        {choices.map((choice) => (
          <option key={choice.value} value={choice.value}>
            {choice.text}
          </option>
        ))}
        {stranger && <option value={value}>{keep(value)}</option>}
      </select>
    </LabelledField>
  );
}
