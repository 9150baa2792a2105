/**
 * What kubectl shows of kubeglue's resources on a real kube-apiserver with kubeglue's CRDs: `kubectl
 * explain` of each kind, its spec and its status says what they are (the descriptions generated from
 * contract/resources/kinds.ts), never `<empty>`; `kubectl get toolruns` shows a finished run's duration
 * as people read it.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { humanDuration } from '../../../contract/resources/duration.ts';
import { RESOURCE_DEFINITIONS } from '../../../contract/resources/kinds.ts';
import { createClusterKubeglueResources } from '../../../kube/resources/index.ts';
import { toolRunFor, toolRunName } from '../../../runs/toolrun.ts';
import { waitUntil } from '../../support/kube/kubeglue.ts';
import { describeKube, useKubeTestBed } from '../../support/kube/provided.ts';
import { runningRun } from '../../support/store.ts';

const exec = promisify(execFile);

describeKube('kubectl on kubeglue resources', () => {
  const bed = useKubeTestBed('kubectl-explain', { crds: true });
  const explain = async (path: string) =>
    (await exec('kubectl', ['--kubeconfig', bed.kube.kubeconfigPath, 'explain', path])).stdout;

  /** The explanation once the API server publishes the CRD's schema (a second or so after it is created). */
  const explained = async (path: string, text: string) => {
    let last = '';
    await waitUntil(
      async () => {
        // kubectl wraps descriptions and indents them: compare with whitespace folded.
        last = (await explain(path).catch((error: Error) => error.message)).replace(/\s+/g, ' ');
        return last.includes(text);
      },
      30_000,
      `kubectl explain ${path} to say '${text}'; last:\n${last}`,
    );
    return last;
  };
  for (const definition of RESOURCE_DEFINITIONS) {
    const kind = definition.singular;
    it(`describes ${kind}.spec and ${kind}.status themselves, and the fields of the spec`, async () => {
      const spec = await explained(`${kind}.spec`, definition.specDescription);
      expect(spec).not.toContain('<empty>');
      expect(spec).toContain('FIELDS:');
      const status = await explained(`${kind}.status`, definition.statusDescription);
      expect(status).not.toContain('<empty>');
      const root = await explained(kind, definition.description);
      expect(root).not.toContain('<empty>');
    });
  }

  it('explains a field of the Tool spec with its description', async () => {
    expect(await explained('tool.spec.steps', 'each one')).not.toContain('<empty>');
    expect(await explained('system.spec.credentialsSecretRef', 'Secret in the same namespace')).toBeTruthy();
    expect(await explained('toolrun.spec.cancel', 'true cancels the run')).toBeTruthy();
  });

  it("explains a Tool's tests: what a test is, its recording and what it expects", async () => {
    const tests = await explained('tool.spec.tests', 'Offline tests (at most 20');
    expect(tests).not.toContain('<empty>');
    for (const field of ['name', 'inputs', 'recording', 'systems', 'expect']) expect(tests).toContain(field);
    expect(await explained('tool.spec.tests.expect', 'outputSchema')).not.toContain('<empty>');
    expect(await explained('tool.spec.tests.recording', 'in run order')).toBeTruthy();
  });

  it('kubectl get toolruns shows the duration of a finished run as people read it', async () => {
    const resources = createClusterKubeglueResources(bed.transport, bed.namespace.name);
    const run = runningRun('took-a-while', {
      toolId: 't',
      tool: { id: 't', steps: [{ id: 'a', config: { type: 'transform', transformCode: '(s) => s' } }] },
      options: { async: true },
    });
    const name = toolRunName(run.runId);
    await resources.toolRuns.create(toolRunFor(run, bed.namespace.name));
    // What the operator writes when the run ends (operator/toolrun/finish.ts).
    await resources.toolRuns.patchStatus(name, {
      status: 'success',
      reason: 'Succeeded',
      durationMs: 184_250,
      duration: humanDuration(184_250),
    });
    const listed = await exec('kubectl', [
      ...['--kubeconfig', bed.kube.kubeconfigPath, '-n', bed.namespace.name],
      ...['get', 'toolruns', name],
    ]);
    const [header, row] = listed.stdout.trim().split('\n');
    expect(header?.split(/\s+/)).toEqual(['NAME', 'TOOL', 'STATUS', 'SOURCE', 'DURATION', 'AGE']);
    expect(row?.split(/\s+/).slice(0, 5)).toEqual([name, 't', 'success', 'api', '3m4s']);
  });
});
