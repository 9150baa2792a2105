import { ApiFailure } from '../api/client.ts';
import { Fact } from './fact.tsx';

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
          {failure.hint && <Fact term="What to do">{failure.hint}</Fact>}
          {failure.traceId && (
            <Fact term="Trace id">
              <code>{failure.traceId}</code>
            </Fact>
          )}
        </dl>
      )}
    </div>
  );
}
