/**
 * A confirmation before something that cannot be undone (deleting a tool, revoking a key): the browser's
 * own modal <dialog>, which makes the page behind it inert; Tab and Shift+Tab go round its controls (the
 * browser alone would let focus leave for its own toolbar), Escape cancels, the safe button has the focus
 * first, and focus returns to where it was when the dialog closes.
 */
import type { ComponentChildren, TargetedKeyboardEvent } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';

interface ConfirmDialogProps {
  open: boolean;
  title: string;
  confirmLabel: string;
  busy?: boolean;
  onConfirm: () => void;
  /** Cancel, Escape or the dialog closing any other way. */
  onCancel: () => void;
  children?: ComponentChildren;
}

export function ConfirmDialog(props: ConfirmDialogProps) {
  const { open, title, confirmLabel, busy, onConfirm, onCancel, children } = props;
  const dialog = useRef<HTMLDialogElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  const titleId = useId();
  const bodyId = useId();

  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (open && !element.open) {
      element.showModal();
      cancel.current?.focus();
    } else if (!open && element.open) {
      element.close();
    }
  }, [open]);

  const keepFocus = (event: TargetedKeyboardEvent<HTMLDialogElement>) => {
    if (event.key !== 'Tab') return;
    const focusable = [
      ...event.currentTarget.querySelectorAll<HTMLElement>(
        'a[href], button:not([disabled]), input, select, textarea',
      ),
    ];
    const first = focusable[0];
    const last = focusable[focusable.length - 1];
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last?.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first?.focus();
    }
  };

  return (
    <dialog
      ref={dialog}
      onKeyDown={keepFocus}
      class="dialog"
      aria-labelledby={titleId}
      aria-describedby={bodyId}
      onClose={() => {
        if (open) onCancel();
      }}
    >
      <h2 id={titleId}>{title}</h2>
      <div id={bodyId}>{children}</div>
      <div class="actions">
        <button type="button" class="secondary" ref={cancel} onClick={onCancel}>
          Cancel
        </button>
        <button type="button" class="danger" disabled={busy} onClick={onConfirm}>
          {confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
