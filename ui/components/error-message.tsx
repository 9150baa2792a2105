import { ApiFailure } from '../api/client.ts';

/**
 * An error for the user: the API's message, its code, and what to do (the error catalog's hint, which
 * the API sends in every error body), with the trace id to quote in a report.
 */
export function ErrorMessage({ error, title }: { error: unknown; title?: string }) {
  if (error === undefined || error === null) return null;
  const failure = error instanceof ApiFailure ? error : undefined;
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div class="error-box" role="alert">
      <p class="error-title">{title ?? 'Something went wrong'}</p>
      <p class="error-message">{message}</p>
      {failure && (
        <dl class="error-details">
          <dt>Code</dt>
          <dd>
            <code>{failure.code}</code>
            {failure.status > 0 && <span> (HTTP {failure.status})</span>}
          </dd>
          {failure.hint && (
            <>
              <dt>What to do</dt>
              <dd>{failure.hint}</dd>
            </>
          )}
          {failure.traceId && (
            <>
              <dt>Trace id</dt>
              <dd>
                <code>{failure.traceId}</code>
              </dd>
            </>
          )}
        </dl>
      )}
    </div>
  );
}
