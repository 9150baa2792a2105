/**
 * A variant's documentation on its system page: where it comes from and how far its processing is
 * (attempts and the next retry included), a file upload (PUT …/documentation) and a keyword search over
 * what was kept (POST …/documentation/search).
 */
import { useId, useState } from 'preact/hooks';
import type { DocumentationSearchAnswer, System } from '../../api/types.ts';
import { useAction } from '../../components/action.ts';
import { ErrorMessage } from '../../components/error-message.tsx';
import { Fact } from '../../components/fact.tsx';
import { LabelledField } from '../../components/field.tsx';
import { formatTime } from '../../components/format.ts';
import { searchDocumentation, uploadDocumentation } from './api.ts';
import { attemptsText, DocumentationStatus } from './status.tsx';

function Upload({ system, uploaded }: { system: System; uploaded(): void }) {
  const id = useId();
  const [file, setFile] = useState<File>();
  const { busy, error, run } = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    if (!file) return;
    await run(async () => {
      await uploadDocumentation(system.id, system.environment, file);
      form.reset();
      setFile(undefined);
      uploaded();
    });
  };
  return (
    <form class="inline-form" onSubmit={submit} aria-label={`Upload documentation (${system.environment})`}>
      <LabelledField id={id} label="Documentation file">
        <input id={id} type="file" required onChange={(event) => setFile(event.currentTarget.files?.[0])} />
      </LabelledField>
      <button type="submit" class="secondary" disabled={busy || !file}>
        {busy ? 'Uploading…' : 'Upload'}
      </button>
      <ErrorMessage error={error} title="The file was not uploaded" />
    </form>
  );
}

function Search({ system }: { system: System }) {
  const id = useId();
  const [keywords, setKeywords] = useState('');
  const [answer, setAnswer] = useState<DocumentationSearchAnswer>();
  const [error, setError] = useState<unknown>();
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      setAnswer(await searchDocumentation(system.id, system.environment, keywords));
    } catch (caught) {
      setAnswer(undefined);
      setError(caught);
    }
  };
  return (
    <div class="doc-search">
      <form
        class="inline-form"
        onSubmit={submit}
        aria-label={`Search the documentation (${system.environment})`}
      >
        <LabelledField id={id} label="Search the documentation">
          <input
            id={id}
            type="search"
            required
            value={keywords}
            onInput={(event) => setKeywords(event.currentTarget.value)}
          />
        </LabelledField>
        <button type="submit" class="secondary">
          Search
        </button>
      </form>
      <ErrorMessage error={error} title="The search failed" />
      {answer && (
        <div role="status">
          <p class="muted">
            {answer.message ??
              `${answer.total} section${answer.total === 1 ? '' : 's'} matched${answer.total > answer.results.length ? `; the best ${answer.results.length}` : ''}`}
          </p>
          <ol class="doc-results">
            {answer.results.map((result, index) => (
              <li key={`${result.source.document}-${index}`}>
                <h4>{result.title}</h4>
                <p class="doc-excerpt">{result.text}</p>
                <p class="muted">{result.source.url ?? result.source.document}</p>
              </li>
            ))}
          </ol>
        </div>
      )}
    </div>
  );
}

export function DocumentationPanel(props: { system: System; canWrite: boolean; changed(): void }) {
  const { system, canWrite, changed } = props;
  const state = system.documentation;
  const attempts = state && attemptsText(state);
  return (
    <section class="variant-part" aria-label={`Documentation (${system.environment})`}>
      <h3>Documentation</h3>
      {state ? (
        <dl class="facts">
          <dt>Status</dt>
          <dd>
            <DocumentationStatus state={state} />
            {attempts && <span class="muted"> {attempts}</span>}
          </dd>
          <dt>Source</dt>
          <dd class="overflow-anywhere">{state.source}</dd>
          <dt>Requested</dt>
          <dd>{formatTime(state.requestedAt)}</dd>
          {state.fetchedAt && <Fact term="Summary made">{formatTime(state.fetchedAt)}</Fact>}
          {state.error && (
            <>
              <dt>Error</dt>
              <dd class="overflow-anywhere">{state.error}</dd>
            </>
          )}
        </dl>
      ) : (
        <p class="muted">None: give a documentation URL (Edit) or upload a file.</p>
      )}
      {canWrite && <Upload system={system} uploaded={changed} />}
      {state?.fetchedAt && <Search system={system} />}
    </section>
  );
}
