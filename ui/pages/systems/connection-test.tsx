/**
 * "Test connection": one harmless read against a saved system variant (POST /v1/systems/{id}/test: a GET
 * of the base URL, SELECT 1, DBSIZE, a list…), and its outcome in a live region: connected or failed as
 * an icon and a word, what was tried, how long it took, and the server's error, in which credentials are
 * already their placeholders. Nothing typed into a form is sent: the test reads what is saved.
 */
import { useState } from 'preact/hooks';
import type { ConnectionTestResult, Environment } from '../../api/types.ts';
import { ErrorMessage } from '../../components/error-message.tsx';
import { testConnection } from './api.ts';

type State =
  | { phase: 'idle' }
  | { phase: 'testing' }
  | { phase: 'done'; result: ConnectionTestResult }
  | { phase: 'refused'; error: unknown };

function Outcome({ result }: { result: ConnectionTestResult }) {
  const { success } = result;
  return (
    <div class={`connection-outcome ${success ? 'connection-ok' : 'connection-failed'}`}>
      <p>
        <span class={`status status-${success ? 'success' : 'failed'}`}>
          <span class="status-icon" aria-hidden="true">
            {success ? '✓' : '✕'}
          </span>
          {success ? 'Connected' : 'Failed'}
        </span>{' '}
        <span>
          {result.tried} <span class="muted">({result.durationMs} ms)</span>
        </span>
      </p>
      {result.error && <p class="connection-error overflow-anywhere">{result.error}</p>}
      {result.detail && <p class="field-note">{result.detail}</p>}
      {result.notes?.map((note) => (
        <p key={note} class="field-note">
          {note}
        </p>
      ))}
    </div>
  );
}

export function ConnectionTest(props: {
  systemId: string;
  environment: Environment;
  label: string;
  note?: string;
}) {
  const { systemId, environment, label, note } = props;
  const [state, setState] = useState<State>({ phase: 'idle' });
  const noteId = `connection-test-note-${environment}`;
  const run = async () => {
    setState({ phase: 'testing' });
    try {
      setState({ phase: 'done', result: await testConnection(systemId, environment) });
    } catch (error) {
      setState({ phase: 'refused', error });
    }
  };
  return (
    <div class="connection-test">
      <button
        type="button"
        class="secondary"
        onClick={run}
        disabled={state.phase === 'testing'}
        aria-describedby={note ? noteId : undefined}
      >
        {label}
      </button>
      {note && (
        <p id={noteId} class="field-note">
          {note}
        </p>
      )}
      {/* Always present, so a screen reader announces what arrives in it. */}
      <div role="status" aria-label={`Connection test (${environment})`}>
        {state.phase === 'testing' && <p>Testing the connection…</p>}
        {state.phase === 'done' && <Outcome result={state.result} />}
      </div>
      {state.phase === 'refused' && (
        <ErrorMessage error={state.error} title="The connection could not be tested" />
      )}
    </div>
  );
}

/** Why a variant has no test, said where the button would be: no step (and no test) speaks its protocol. */
export function NotYetNotice({ name }: { name: string }) {
  return (
    <p class="notice notice-warning" role="note">
      <strong>No step can use {name} systems yet.</strong> kubeglue stores this system and its credentials,
      but a tool with a step on it is refused when saved, and its connection cannot be tested: no {name}{' '}
      server runs where kubeglue is tested. The protocols steps speak: docs/tools.md#other-protocols.
    </p>
  );
}
