/**
 * Choosing a few ids (the tools or systems a new key is limited to): type or pick one from the suggestions
 * (a datalist of the ids the signed-in key sees), Enter or "Add" puts it in the list, each chosen id has a
 * remove button. None chosen means no limit.
 */
import { useId } from 'preact/hooks';

/** The ids chosen, and what is typed but not added yet (creating the key adds it too: chosenIds). */
export interface IdChoice {
  ids: readonly string[];
  text: string;
}

export const NO_IDS: IdChoice = { ids: [], text: '' };

/** Every id chosen, the one typed included; undefined when none (no limit). */
export function chosenIds(choice: IdChoice): string[] | undefined {
  const id = choice.text.trim();
  const ids = id && !choice.ids.includes(id) ? [...choice.ids, id] : [...choice.ids];
  return ids.length > 0 ? ids : undefined;
}

export interface IdPickerProps {
  /** "tool" or "system": names the legend, the field and the buttons. */
  noun: string;
  value: IdChoice;
  change(value: IdChoice): void;
  suggestions: readonly string[];
  /** What none chosen means ("every tool"). */
  none: string;
  disabled?: boolean;
}

export function IdPicker(props: IdPickerProps) {
  const { noun, value, change, suggestions, none, disabled } = props;
  const { ids, text } = value;
  const inputId = useId();
  const listId = useId();
  const add = () => change({ ids: chosenIds(value) ?? [], text: '' });
  return (
    <fieldset class="id-picker" disabled={disabled}>
      <legend>Limit to {noun}s</legend>
      {ids.length === 0 ? (
        <p class="muted">None chosen: {none}.</p>
      ) : (
        <ul class="chips" aria-label={`Chosen ${noun}s`}>
          {ids.map((id) => (
            <li key={id}>
              <code>{id}</code>{' '}
              <button
                type="button"
                class="link-button"
                aria-label={`Remove ${noun} ${id}`}
                onClick={() => change({ ids: ids.filter((other) => other !== id), text })}
              >
                remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <div class="inline-field">
        <label for={inputId}>Add a {noun}</label>
        <input
          id={inputId}
          type="text"
          list={listId}
          autocomplete="off"
          spellcheck={false}
          value={text}
          onInput={(event) => change({ ids, text: event.currentTarget.value })}
          onKeyDown={(event) => {
            if (event.key === 'Enter') {
              event.preventDefault();
              add();
            }
          }}
        />
        <button type="button" class="secondary" onClick={add} disabled={!text.trim()}>
          Add {noun}
        </button>
      </div>
      <datalist id={listId}>
        {suggestions
          .filter((id) => !ids.includes(id))
          .map((id) => (
            <option key={id} value={id} />
          ))}
      </datalist>
    </fieldset>
  );
}
