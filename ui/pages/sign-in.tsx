/** Signing in with an API key: checked with GET /v1/me; a refused key shows the API's error. */
import { useState } from 'preact/hooks';
import { ErrorMessage } from '../components/error-message.tsx';
import { LabelledField } from '../components/field.tsx';
import { signIn } from '../session.ts';

export function SignInPage() {
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await signIn(key);
      // The form is gone now: focus goes to the page it uncovered, not to the document's start.
      document.getElementById('content')?.focus();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="sign-in" aria-labelledby="sign-in-title">
      <h1 id="sign-in-title">Sign in to kubeglue</h1>
      <p>
        Sign in with an API key. It is kept in this browser tab only, and sign out removes it. The admin key
        is printed when kubeglue first starts; other keys are created with <code>POST /v1/api-keys</code>.
      </p>
      <form onSubmit={submit}>
        <LabelledField id="api-key" label="API key">
          <input
            id="api-key"
            name="api-key"
            type="password"
            autocomplete="off"
            spellcheck={false}
            required
            value={key}
            onInput={(event) => setKey(event.currentTarget.value)}
          />
        </LabelledField>
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <ErrorMessage error={error} title="Sign in failed" />
    </section>
  );
}
