/**
 * A button for what cannot be undone (revoke a key, delete a schedule, reset a tool's state): it opens a
 * modal dialog (the browser's own <dialog>: focus moves into it and stays, Escape cancels) that says what
 * will happen, and acts only on the dialog's confirm button. A refusal of the API shows inside the dialog.
 */
import type { ComponentChildren } from 'preact';
import { useId, useRef, useState } from 'preact/hooks';
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

export function ConfirmButton(props: ConfirmButtonProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const open = () => {
    setError(undefined);
    dialog.current?.showModal();
  };
  const confirm = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await props.onConfirm();
      dialog.current?.close();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
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
      <dialog ref={dialog} class="confirm" aria-labelledby={titleId}>
        <h2 id={titleId}>{props.title}</h2>
        <div class="confirm-body">{props.children}</div>
        <ErrorMessage error={error} title={`${props.confirmLabel} failed`} />
        <div class="actions">
          <button type="button" class="danger" disabled={busy} onClick={confirm}>
            {busy ? 'Working…' : props.confirmLabel}
          </button>
          <button type="button" class="secondary" disabled={busy} onClick={() => dialog.current?.close()}>
            Cancel
          </button>
        </div>
      </dialog>
    </>
  );
}
