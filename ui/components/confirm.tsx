/**
 * A button for what cannot be undone (revoke a key, delete a schedule or a tool, reset a tool's state): it
 * opens a modal dialog (the browser's own <dialog>, which makes the page behind it inert; Escape cancels)
 * that says what will happen, and acts only on the dialog's confirm button. Focus starts on Cancel, the
 * safe choice, and Tab goes round the dialog's buttons (the browser alone lets it leave for its own
 * toolbar). A refusal of the API shows inside the dialog.
 */
import type { ComponentChildren, TargetedKeyboardEvent } from 'preact';
import { useId, useRef } from 'preact/hooks';
import { useAction } from './action.ts';
import { ErrorMessage } from './error-message.tsx';

export interface ConfirmButtonProps {
  /** The button's text ("Revoke"). */
  label: string;
  /** Its accessible name when the text alone is ambiguous in a list ("Revoke key ci-bot"). */
  ariaLabel?: string;
  /** The dialog's heading, a question ("Revoke the key ci-bot?"). */
  title: string;
  /** What happens, in a sentence or two. */
  children: ComponentChildren;
  /** The confirm button's text ("Revoke key"). */
  confirmLabel: string;
  /** Does it; a throw keeps the dialog open with the error. */
  onConfirm: () => Promise<void>;
  disabled?: boolean;
}

/** Tab from the last control goes to the first, Shift+Tab from the first to the last. */
function keepFocusInside(event: TargetedKeyboardEvent<HTMLDialogElement>): void {
  if (event.key !== 'Tab') return;
  const controls = [
    ...event.currentTarget.querySelectorAll<HTMLElement>(
      'a[href], button:not([disabled]), input, select, textarea',
    ),
  ];
  const first = controls[0];
  const last = controls[controls.length - 1];
  if (event.shiftKey ? document.activeElement === first : document.activeElement === last) {
    event.preventDefault();
    (event.shiftKey ? last : first)?.focus();
  }
}

export function ConfirmButton(props: ConfirmButtonProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  const titleId = useId();
  const { busy, error, setError, run } = useAction();
  const open = () => {
    setError(undefined);
    dialog.current?.showModal();
    cancel.current?.focus();
  };
  const confirm = () =>
    run(async () => {
      await props.onConfirm();
      dialog.current?.close();
    });
  return (
    <>
      <button
        type="button"
        class="danger"
        aria-label={props.ariaLabel}
        disabled={props.disabled}
        onClick={open}
      >
        {props.label}
      </button>
      <dialog ref={dialog} class="confirm" aria-labelledby={titleId} onKeyDown={keepFocusInside}>
        <h2 id={titleId}>{props.title}</h2>
        <div class="confirm-body">{props.children}</div>
        <ErrorMessage error={error} title={`${props.confirmLabel} failed`} />
        <div class="actions">
          <button type="button" class="danger" disabled={busy} onClick={confirm}>
            {busy ? 'Working…' : props.confirmLabel}
          </button>
          <button
            type="button"
            class="secondary"
            ref={cancel}
            disabled={busy}
            onClick={() => dialog.current?.close()}
          >
            Cancel
          </button>
        </div>
      </dialog>
    </>
  );
}
