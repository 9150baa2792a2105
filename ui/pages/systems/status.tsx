/**
 * What a system variant is ready for, each as an icon and a word (never colour alone): its credentials
 * (key names only: values never come back from the API), its OAuth token and its documentation.
 */
import type { AuthType, DocumentationState, OAuthState, System } from '../../api/types.ts';
import { formatTime } from '../../components/format.ts';
import { Badge, type BadgeProps } from '../../components/status.tsx';

export const AUTH_LABELS: Record<AuthType, string> = {
  none: 'None',
  apiKey: 'API key',
  bearer: 'Bearer token',
  basic: 'Basic (username and password)',
  customHeaders: 'Custom headers',
  oauth: 'OAuth 2.0',
  botToken: 'Bot token',
  dataStore: 'Data store login',
};

/** The stored credential keys (the API answers each as a placeholder, never its value). */
export function credentialKeys(system: System): string[] {
  return Object.keys(system.credentials).sort();
}

export function KeyNames({ keys }: { keys: readonly string[] }) {
  if (keys.length === 0) return null;
  return (
    <ul class="inline-list key-names" aria-label="Stored credential keys">
      {keys.map((key) => (
        <li key={key}>
          <code>{key}</code>
        </li>
      ))}
    </ul>
  );
}

/** Credentials ready: stored (the server checked them against the method when saved), or none needed. */
export function CredentialsStatus({ system }: { system: System }) {
  const keys = credentialKeys(system);
  if (keys.length > 0) {
    return (
      <span class="credentials-status">
        <Badge tone="success" icon="✓" word="stored" /> <KeyNames keys={keys} />
      </span>
    );
  }
  if (!system.authType || system.authType === 'none')
    return <Badge tone="neutral" icon="–" word="none needed" />;
  return <Badge tone="aborted" icon="!" word="none stored (give them per run)" />;
}

const OAUTH: Record<OAuthState['status'], BadgeProps> = {
  active: { tone: 'success', icon: '✓', word: 'connected' },
  expired: { tone: 'aborted', icon: '◷', word: 'expired (refreshed at next use)' },
  none: { tone: 'neutral', icon: '–', word: 'no token yet (fetched at first use)' },
  not_authorized: { tone: 'aborted', icon: '○', word: 'not connected' },
  needs_reauthorization: { tone: 'failed', icon: '!', word: 'needs reconnect' },
};

export function OAuthStatus({ oauth, withExpiry = false }: { oauth: OAuthState; withExpiry?: boolean }) {
  const shown = OAUTH[oauth.status];
  return (
    <span>
      <Badge {...shown} />
      {withExpiry && oauth.expiresAt && <span class="muted"> expires {formatTime(oauth.expiresAt)}</span>}
    </span>
  );
}

/** pending is split as the API tells it: processing now, waiting for a retry, or waiting for a first go. */
export function documentationPhase(state: DocumentationState): BadgeProps {
  if (state.status === 'ready') return { tone: 'success', icon: '✓', word: 'ready' };
  if (state.status === 'failed') return { tone: 'failed', icon: '✕', word: 'failed' };
  if (state.processing) return { tone: 'running', icon: '↻', word: 'processing' };
  if (state.retryAt) return { tone: 'aborted', icon: '◷', word: 'waiting to retry' };
  return { tone: 'running', icon: '◷', word: 'pending' };
}

export function DocumentationStatus({ state }: { state: DocumentationState }) {
  return <Badge {...documentationPhase(state)} />;
}

/** "attempt 2 of 5, next at 12:03:04": only once an attempt was made. */
export function attemptsText(state: DocumentationState): string | undefined {
  if (state.status === 'ready' || state.attempts === 0) return undefined;
  const retry = state.retryAt ? `, next at ${formatTime(state.retryAt)}` : '';
  return `attempt ${state.attempts} of ${state.maxAttempts}${retry}`;
}
