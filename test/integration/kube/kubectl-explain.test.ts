/**
 * `kubectl explain` against a real kube-apiserver with kubeglue's CRDs: each kind, its spec and its status
 * say what they are (the descriptions generated from contract/resources/kinds.ts), never `<empty>`.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { RESOURCE_DEFINITIONS } from '../../../contract/resources/kinds.ts';
import { waitUntil } from '../../support/kube/kubeglue.ts';
import { describeKube, useKubeTestBed } from '../../support/kube/provided.ts';

const exec = promisify(execFile);

describeKube('kubectl explain of kubeglue resources', () => {
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
});
