/**
 * `POST /v1/tools/{toolId}/tests`: a recorded run saved as a test of its tool (the dashboard's "Save as
 * test"). The conversion is contract/api/tool-test.ts's testFromRun and withTest, the ones `kubeglue test
 * record` uses; here the run, its results and recording come from the store, the systems' base URLs from
 * the stored systems, and the tool is updated through the ToolService (the save-time checks, the key's
 * systems, a concurrent write retried on the tool as it then is).
 */
import {
  KG_ERR_RUN_NOT_A_TEST,
  KG_ERR_TOOL_ARCHIVED,
  KG_ERR_TOOL_NOT_FOUND,
  KG_ERR_TOOL_TESTS_LIMIT,
} from '../contract/api/errors.ts';
import { stepSystemIds, type Tool, type ToolUpdateBody } from '../contract/api/tool.ts';
import {
  MAX_TOOL_TESTS,
  MAX_TOOL_TESTS_BYTES,
  type SavedToolTest,
  type ToolTest,
  testFromRun,
  withTest,
} from '../contract/api/tool-test.ts';
import type { Store } from '../store/index.ts';
import type { ToolSaveGrant } from '../tools/service.ts';
import { type Caller, canSee, visibleRun } from './context.ts';

export interface SaveAsTestDeps {
  store: Store;
  tools: {
    get(id: string): Promise<Tool | undefined>;
    update(
      id: string,
      body: ToolUpdateBody | ((tool: Tool) => ToolUpdateBody),
      grant: ToolSaveGrant,
    ): Promise<Tool>;
  };
  /** A system's base URL (its prod variant); undefined when it has none or is gone. */
  systemUrl(systemId: string): Promise<string | undefined>;
}

export interface SaveAsTest {
  toolId: string;
  fromRun: string;
  name?: string | undefined;
  caller: Caller;
}

export async function saveRunAsTest(deps: SaveAsTestDeps, input: SaveAsTest): Promise<SavedToolTest> {
  const { toolId, caller } = input;
  // A tool the key may not use answers exactly like a missing one.
  if (!canSee(caller, toolId)) throw KG_ERR_TOOL_NOT_FOUND(toolId);
  const tool = await deps.tools.get(toolId);
  if (!tool) throw KG_ERR_TOOL_NOT_FOUND(toolId);
  if (tool.archived) throw KG_ERR_TOOL_ARCHIVED(toolId);
  const run = await visibleRun(deps.store, input.fromRun, caller);
  if (run.toolId !== toolId) throw KG_ERR_RUN_NOT_A_TEST(run.runId, 'other-tool');
  if (run.status === 'running') throw KG_ERR_RUN_NOT_A_TEST(run.runId, 'running');
  const recording = await deps.store.getRunRecording(run.runId);
  if (!recording) throw KG_ERR_RUN_NOT_A_TEST(run.runId, run.recording ? 'removed' : 'not-recorded');
  const result = await deps.store.getRunResult(run.runId);
  const systems: Record<string, string> = {};
  for (const id of stepSystemIds(tool.steps)) {
    const url = await deps.systemUrl(id);
    if (url !== undefined) systems[id] = url;
  }
  const test = testFromRun(
    {
      runId: run.runId,
      status: run.status,
      inputs: result?.toolPayload ?? run.toolPayload ?? {},
      output: result?.data ?? null,
      recording,
      systems,
    },
    input.name,
  );
  if ('refused' in test) throw KG_ERR_RUN_NOT_A_TEST(run.runId, test.refused);
  let saved: { tests: ToolTest[]; replaced: boolean } | undefined;
  await deps.tools.update(
    toolId,
    // Applied to the tool as stored at each attempt: a test another click added meanwhile is kept.
    (current) => {
      const next = withTest(current.tests ?? [], test);
      if ('bound' in next) {
        throw next.bound === 'count'
          ? KG_ERR_TOOL_TESTS_LIMIT(toolId, 'count', next.tests, MAX_TOOL_TESTS)
          : KG_ERR_TOOL_TESTS_LIMIT(toolId, 'bytes', next.bytes, MAX_TOOL_TESTS_BYTES);
      }
      saved = next;
      return { tests: next.tests };
    },
    { systemIds: caller.systemIds },
  );
  return {
    toolId,
    name: test.name,
    replaced: saved?.replaced ?? false,
    exchanges: test.recording.length,
    tests: saved?.tests.map((one) => one.name) ?? [],
  };
}
