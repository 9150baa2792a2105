/**
 * A variant's OAuth token on its system page, and Connect: it starts the authorization-code flow
 * (GET …/oauth/authorize with returnTo, this page) and sends the browser to the provider; the provider
 * sends it to kubeglue's callback, which redirects back here with `?oauth=connected` or
 * `?oauth=failed&error=<code>` (docs/oauth.md).
 */
import { useState } from 'preact/hooks';
import { isHttpUrl } from '../../../contract/http-url.ts';
import { ApiFailure } from '../../api/client.ts';
import type { Environment, System } from '../../api/types.ts';
import { ErrorMessage } from '../../components/error-message.tsx';
import { Fact } from '../../components/fact.tsx';
import { formatTime } from '../../components/format.ts';
import { systemHref } from '../../hrefs.ts';
import { withQuery } from '../../router.tsx';
import { authorizeOAuth } from './api.ts';
import { OAuthStatus } from './status.tsx';

/** What the callback said when it sent the browser back to this page. */
export interface OAuthReturn {
  environment: Environment;
  connected: boolean;
  code?: string;
}

export function OAuthReturnNote({ outcome }: { outcome: OAuthReturn }) {
  if (outcome.connected) {
    return (
      <p class="notice" role="status">
        <span aria-hidden="true">✓ </span>The {outcome.environment} variant is connected: the provider granted
        access and kubeglue keeps its token.
      </p>
    );
  }
  const failure = new ApiFailure({
    status: 0,
    message: `The provider or the code exchange refused the connection of the ${outcome.environment} variant.`,
    code: outcome.code ?? 'UNKNOWN',
    hint: 'Check the client settings at the provider and the OAuth credentials, then connect again.',
  });
  return <ErrorMessage error={failure} title="Connecting did not complete" />;
}

export function OAuthPanel({ system, canWrite }: { system: System; canWrite: boolean }) {
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const oauth = system.oauth;
  // Only the authorization-code grant sends a user to the provider; it needs an authorization URL.
  const connectable = canWrite && 'authorizationUrl' in system.credentials;
  const connect = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const here = withQuery(systemHref(system.id), {
        environment: system.environment,
      });
      const started = await authorizeOAuth(system.id, system.environment, here);
      // The server stores only http(s) authorization URLs; checked again before this page leaves, so
      // no other scheme (javascript:, data:) ever runs here, whatever the answer held.
      if (!isHttpUrl(started.authorizationUrl)) {
        throw new Error(
          `The provider's authorization URL is not an http(s) URL, so the dashboard does not open it. ` +
            'Correct authorizationUrl in the OAuth credentials.',
        );
      }
      window.location.assign(started.authorizationUrl);
    } catch (caught) {
      setError(caught);
      setBusy(false);
    }
  };
  const connected = oauth?.status === 'active' || oauth?.status === 'expired';
  return (
    <section class="variant-part" aria-label={`OAuth (${system.environment})`}>
      <h3>OAuth</h3>
      {oauth ? (
        <dl class="facts">
          <dt>Token</dt>
          <dd>
            <OAuthStatus oauth={oauth} />
          </dd>
          {oauth.expiresAt && <Fact term="Expires">{formatTime(oauth.expiresAt)}</Fact>}
          {oauth.scopes && (
            <Fact term="Scopes">
              <code>{oauth.scopes}</code>
            </Fact>
          )}
        </dl>
      ) : (
        <p class="muted">
          kubeglue does not manage this system's token (a stored accessToken is sent as is).
        </p>
      )}
      {connectable && (
        <button type="button" onClick={connect} disabled={busy}>
          {busy
            ? 'Opening the provider…'
            : connected
              ? `Reconnect ${system.environment}`
              : `Connect ${system.environment}`}
        </button>
      )}
      <ErrorMessage error={error} title="Connecting could not start" />
    </section>
  );
}
