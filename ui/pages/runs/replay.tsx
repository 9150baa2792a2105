/**
 * What a recorded run's page offers with its recording (docs/authoring.md#replay, #test): replay it with
 * the tool's current definition or an edited one (POST /v1/runs/{runId}/replay: the recording answers
 * every call, nothing is stored), shown beside the original with their differences; and save it as a
 * test of its tool in one click (POST /v1/tools/{toolId}/tests).
 */
import { useId, useState } from 'preact/hooks';
import * as routes from '../../../contract/api/route-paths.ts';
import { ApiFailure } from '../../api/client.ts';
import type { ErrorIssue, ReplayAnswer, Run, SavedToolTest } from '../../api/types.ts';
import { useAction } from '../../components/action.ts';
import { ErrorMessage } from '../../components/error-message.tsx';
import { JsonEditor, useEditorProblems } from '../../components/json-editor.tsx';
import { JsonView } from '../../components/json-view.tsx';
import { StepOutcome } from '../../components/status.tsx';
import { ValueDiff } from '../../components/value-diff.tsx';
import { toolHref } from '../../hrefs.ts';
import { Link } from '../../router.tsx';
import { client } from '../../session.ts';
import { DEFINITION_NOT_OBJECT } from '../tools/definition.ts';

/** The replay beside the original: the output's differences, each step's, then both outputs. */
function ReplayResult({ answer }: { answer: ReplayAnswer }) {
  const { diff, original, replay } = answer;
  const changedSteps = diff.steps.filter((step) => step.status !== 'unchanged' || step.error);
  return (
    <section aria-labelledby="replay-result-title" class="replay-result">
      <h3 id="replay-result-title">
        Replay of the {answer.definition === 'body' ? 'edited' : answer.definition} definition
      </h3>
      <p role="status">
        {replay.success ? 'The replay succeeded' : 'The replay failed'};{' '}
        {diff.changed ? 'it differs from the original run.' : 'it is the same as the original run.'}
      </p>
      {replay.error && (
        <div class="step-error" role="note" aria-label="Error of the replay">
          <pre>{replay.error}</pre>
        </div>
      )}
      <h4>Output</h4>
      <ValueDiff diff={diff.output} label="Differences of the output" before="original" after="replay" />
      <h4>Steps</h4>
      {changedSteps.length === 0 ? (
        <p class="muted">Every step's result is the same.</p>
      ) : (
        <ul class="replay-steps">
          {changedSteps.map((step) => (
            <li key={step.stepId} class="replay-step">
              <p>
                <span class="step-id">{step.stepId}</span>: {step.status}
                {step.success.after !== undefined && (
                  <>
                    {' '}
                    <StepOutcome success={step.success.after} />
                  </>
                )}
              </p>
              {step.error && (
                <div class="step-error" role="note" aria-label={`Replay error of step ${step.stepId}`}>
                  <pre>{step.error}</pre>
                </div>
              )}
              {step.data && (
                <ValueDiff
                  diff={step.data}
                  label={`Differences of step ${step.stepId}`}
                  before="original"
                  after="replay"
                />
              )}
            </li>
          ))}
        </ul>
      )}
      <div class="definition-grid">
        <section aria-label="Original output">
          <h4>Original output</h4>
          <JsonView value={original.data ?? null} label="Original output" />
        </section>
        <section aria-label="Replay output">
          <h4>Replay output</h4>
          <JsonView value={replay.data ?? null} label="Replay output" />
        </section>
      </div>
    </section>
  );
}

/** Replay with the current definition, or with the definition edited here (not saved). */
export function ReplayPanel({ run }: { run: Run }) {
  const editorId = useId();
  const [answer, setAnswer] = useState<ReplayAnswer>();
  const { busy, error, run: start } = useAction();
  const [text, setText] = useState<string>();
  const [loadError, setLoadError] = useState<unknown>();
  const { syntax, issues, setIssues, readObject } = useEditorProblems();

  const replay = (tool?: Record<string, unknown>) =>
    start(async () => {
      setIssues([]);
      setAnswer(undefined);
      try {
        setAnswer(
          await client().call(routes.replayRun, {
            params: { runId: run.runId },
            body: tool ? { tool: tool as never } : { definition: 'current' },
          }),
        );
      } catch (caught) {
        // A problem of the definition is placed at its line in the editor: the save-time checks name it
        // from the tool, the body's validation from the body ({tool}).
        if (caught instanceof ApiFailure && tool) {
          setIssues(
            (caught.issues as readonly ErrorIssue[]).flatMap((issue) =>
              typeof issue === 'string'
                ? []
                : [{ ...issue, path: issue.path[0] === 'tool' ? issue.path.slice(1) : issue.path }],
            ),
          );
        }
        throw caught;
      }
    });
  // The editor starts from the tool's current definition, read when first opened.
  const openEditor = (open: boolean) => {
    if (!open || text !== undefined) return;
    client()
      .call(routes.getTool, { params: { toolId: run.toolId } })
      .then(
        (tool) => {
          const { createdAt: _c, updatedAt: _u, tests: _t, archived: _a, ...definition } = tool;
          setText(JSON.stringify(definition, null, 2));
        },
        (caught: unknown) => {
          setLoadError(caught);
          setText(JSON.stringify(run.tool ?? { id: run.toolId, steps: [] }, null, 2));
        },
      );
  };
  const replayEdited = (event: Event) => {
    event.preventDefault();
    const definition = readObject(text ?? '', DEFINITION_NOT_OBJECT);
    if (definition) void replay(definition);
  };

  return (
    <section aria-labelledby="replay-title">
      <h2 id="replay-title">Replay</h2>
      <p class="muted">
        Runs the tool again against this run's recording only: no system is called, no credential used,
        nothing stored. A request that differs from the recorded one fails its step, with the difference.
      </p>
      <div class="actions">
        <button type="button" class="secondary" disabled={busy} onClick={() => replay()}>
          Replay with the current definition
        </button>
      </div>
      <details
        class="replay-edit"
        onToggle={(event) => openEditor((event.currentTarget as HTMLDetailsElement).open)}
      >
        <summary>Replay with an edited definition</summary>
        <ErrorMessage error={loadError} title="The tool could not be read; this is the run's definition" />
        {text === undefined ? (
          <p role="status">Reading the tool…</p>
        ) : (
          <form onSubmit={replayEdited} noValidate>
            <JsonEditor
              id={editorId}
              label="Definition to replay (not saved)"
              value={text}
              onInput={setText}
              issues={issues}
              syntax={syntax}
              rows={16}
            />
            <div class="actions">
              <button type="submit" disabled={busy}>
                Replay with this definition
              </button>
            </div>
          </form>
        )}
      </details>
      {busy && <p role="status">Replaying…</p>}
      <ErrorMessage error={error} title="The run could not be replayed" />
      {answer && <ReplayResult answer={answer} />}
    </section>
  );
}

/** "Save as test": the run, its recording and its output as a test of its tool. */
export function SaveAsTest({ run }: { run: Run }) {
  const [saved, setSaved] = useState<SavedToolTest>();
  const { busy, error, run: start } = useAction();
  const save = () =>
    start(async () =>
      setSaved(
        await client().call(routes.addToolTest, {
          params: { toolId: run.toolId },
          body: { fromRun: run.runId },
        }),
      ),
    );
  return (
    <div class="save-as-test">
      <button type="button" class="secondary" disabled={busy} onClick={save}>
        Save as test
      </button>
      <ErrorMessage error={error} title="The run could not be saved as a test" />
      {saved && (
        <p role="status">
          {saved.replaced ? 'Replaced' : 'Saved'} test <code>{saved.name}</code> of tool{' '}
          <Link href={`${toolHref(saved.toolId)}#tests`}>{saved.toolId}</Link> ({saved.tests.length} test
          {saved.tests.length === 1 ? '' : 's'}): run them on the tool's page.
        </p>
      )}
    </div>
  );
}
