/**
 * Copies a text to the clipboard and says so (a status a screen reader announces). The Clipboard API needs
 * a secure context (https, or http on localhost); elsewhere the text is selected in `select` (an input the
 * caller shows) for the user to copy with the keyboard, and the status says how.
 */
import { useState } from 'preact/hooks';

export function CopyButton({
  text,
  label = 'Copy',
  select,
}: {
  text: string;
  label?: string;
  /** The input showing the text, selected when the clipboard is not available. */
  select?: () => HTMLInputElement | HTMLTextAreaElement | null;
}) {
  const [said, setSaid] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setSaid('Copied to the clipboard.');
    } catch {
      const field = select?.();
      field?.focus();
      field?.select();
      setSaid('The browser does not allow copying here: the text is selected, press Ctrl+C (⌘C) to copy it.');
    }
  };
  return (
    <>
      <button type="button" class="secondary" onClick={copy}>
        {label}
      </button>
      <span class="muted" role="status">
        {said}
      </span>
    </>
  );
}
