/**
 * A tool's tests on its page (Tool.tests, docs/authoring.md#test): each test's name, what it answers the
 * steps' calls with and what it expects; "Run tests" runs them on the server (POST /v1/tools/{id}/test:
 * against their recordings, no network, nothing stored) and shows each result, a failure with its
 * difference from the expected output, its schema's complaints or its error.
 */
import { useState } from 'preact/hooks';
import * as routes from '../../../contract/api/route-paths.ts';
import type { Tool, ToolTestAnswer } from '../../api/types.ts';
import { useAction } from '../../components/action.ts';
import { ErrorMessage } from '../../components/error-message.tsx';
import { Badge } from '../../components/status.tsx';
import { ValueDiff } from '../../components/value-diff.tsx';
import { client } from '../../session.ts';

export function ToolTests({ tool, canRun }: { tool: Tool; canRun: boolean }) {
  const tests = tool.tests ?? [];
  const [answer, setAnswer] = useState<ToolTestAnswer>();
  const { busy, error, run: start } = useAction();
  const run = () =>
    start(async () => {
      setAnswer(undefined);
      setAnswer(await client().call(routes.testTool, { params: { toolId: tool.id } }));
    });
  const results = new Map(answer?.results.map((result) => [result.name, result]));
  const failed = answer?.results.filter((result) => !result.passed).length ?? 0;
  return (
    <section aria-labelledby="tests-title" id="tests">
      <div class="page-head">
        <h2 id="tests-title">Tests</h2>
        {canRun && tests.length > 0 && (
          <div class="actions">
            <button type="button" disabled={busy} onClick={run}>
              Run tests
            </button>
          </div>
        )}
      </div>
      {tests.length === 0 ? (
        <p class="muted">
          No tests yet. Save a recorded run as a test from its page ("Save as test"), or with{' '}
          <code>kubeglue test record &lt;runId&gt;</code>.
        </p>
      ) : (
        <p class="muted">
          Each test runs the tool against the exchanges it recorded: no system is called, no credential used,
          nothing stored.
        </p>
      )}
      <ErrorMessage error={error} title="The tests could not be run" />
      {busy && <p role="status">Running {tests.length} tests…</p>}
      {answer && (
        <p role="status" class="tests-summary">
          {answer.results.length - failed} passed, {failed} failed.
        </p>
      )}
      <ul class="tool-tests">
        {tests.map((test) => {
          const result = results.get(test.name);
          return (
            <li key={test.name} class="tool-test">
              <h3 class="tool-test-name">
                {test.name}{' '}
                {result &&
                  (result.passed ? (
                    <Badge icon="✓" word="passed" tone="success" />
                  ) : (
                    <Badge icon="✕" word="failed" tone="failed" />
                  ))}
              </h3>
              <p class="muted">
                {test.recording.length} recorded exchange{test.recording.length === 1 ? '' : 's'}; expects{' '}
                {'output' in test.expect ? 'this output exactly' : 'an output that fits its schema'}.
              </p>
              {result && !result.passed && (
                <div class="test-failure" role="note" aria-label={`Why ${test.name} failed`}>
                  {result.error && <pre>{result.error}</pre>}
                  {result.schemaErrors && <pre>{result.schemaErrors}</pre>}
                  {result.diff && (
                    <ValueDiff
                      diff={result.diff}
                      label={`Differences of ${test.name}`}
                      before="expected"
                      after="got"
                    />
                  )}
                </div>
              )}
            </li>
          );
        })}
      </ul>
    </section>
  );
}
