/** Copies a text to the clipboard, and says whether it worked (next to the button, for screen readers too). */
import { useState } from 'preact/hooks';

export function CopyButton({ text, label }: { text: string; label: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setState('copied');
    } catch {
      setState('failed');
    }
  };
  return (
    <span class="copy">
      <button type="button" class="secondary" onClick={copy}>
        {label}
      </button>{' '}
      <span role="status" class="muted">
        {state === 'copied'
          ? 'Copied'
          : state === 'failed'
            ? 'Copying was refused: select the text and copy it'
            : ''}
      </span>
    </span>
  );
}
