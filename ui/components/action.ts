/**
 * Something a user starts from a page (confirm, save, upload, pause): busy while it runs, so that its
 * button is disabled, and the error it failed with, shown until the next attempt.
 */
import { useState } from 'preact/hooks';

export interface Action {
  busy: boolean;
  /** What the last attempt failed with; undefined before and while the next runs. */
  error: unknown;
  setError(error: unknown): void;
  /** Runs `action`: busy until it settles, its failure kept in `error`. */
  run(action: () => Promise<void>): Promise<void>;
}

export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, setError, run };
}
