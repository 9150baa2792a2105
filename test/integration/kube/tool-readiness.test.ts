import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import type { Run } from '../../../contract/api/run.ts';
import { SystemReason, ToolReason } from '../../../contract/reasons.ts';
import type { SystemResource, ToolResource, ToolRunResource } from '../../../contract/resources/kinds.ts';
import type { Condition } from '../../../contract/resources/meta.ts';
import { toolRunName } from '../../../runs/toolrun.ts';
import { useTestDatabase } from '../../support/database.ts';
import { callApi, TEST_ADMIN_KEY } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { useKubeglueRoles, waitFor } from '../../support/kube/kubeglue.ts';
import { describeKube, useKubeTestBed } from '../../support/kube/provided.ts';

const readyOf = (object: { status?: { conditions?: Condition[] | undefined } } | undefined) =>
  object?.status?.conditions?.find((condition) => condition.type === 'Ready');

/**
 * What makes a Tool not Ready on Kubernetes, as a platform engineer meets it: the `kubeglue api` and
 * `kubeglue operator` processes against the real kube-apiserver (v1.20: no CEL, so the API server checks
 * only the CRD's schema), runner Pods by the process kubelet, and an HTTP target that logs every request.
 */
describeKube('Tools that are not Ready on Kubernetes', () => {
  const bed = useKubeTestBed('tool-readiness', { crds: true });
  const db = useTestDatabase();
  const target = useHttpTarget();
  const roles = useKubeglueRoles(bed, db, {
    env: { KUBEGLUE_EGRESS_PRIVATE: 'allow', KUBEGLUE_LOG_LEVEL: 'warn' },
    // One async run at a time: a run can wait queued while its System breaks.
    operatorEnv: { KUBEGLUE_MAX_ASYNC_RUNS: '1' },
    readyTimeoutMs: 90_000,
  });

  const call = <T>(method: string, path: string, body?: unknown) =>
    callApi<T>(roles.started.url, TEST_ADMIN_KEY, method, path, body);
  /** `kubectl apply -f` of these objects, written to a file as a user keeps them. */
  const apply = async (name: string, ...objects: unknown[]) => {
    const file = join(bed.dir, `${name}.yaml`);
    await writeFile(file, objects.map((object) => stringify(object)).join('---\n'));
    return bed.kubectl('apply', '-f', file);
  };
  const getObject = async <T>(kind: string, name: string): Promise<T | undefined> => {
    const answer = await bed.kubectl('get', kind, name, '-o', 'json', '--ignore-not-found');
    return answer.trim() ? (JSON.parse(answer) as T) : undefined;
  };
  const toolWhen = (name: string, what: string, ok: (ready: Condition | undefined) => boolean) =>
    waitFor(
      `Tool ${name}: ${what}`,
      () => getObject<ToolResource>('tool', name),
      (tool) => ok(readyOf(tool)) && readyOf(tool)?.observedGeneration === tool?.metadata.generation,
      30_000,
    );
  const runOf = async (runId: string) => (await call<Run>('GET', `/v1/runs/${runId}`)).body;

  describe('one check for REST and kubectl', () => {
    // Only checked, never run: the tools are built when the file is collected, before any server starts.
    const fetch = (id: string) => ({ id, config: { type: 'request', url: 'http://127.0.0.1:9/items' } });
    // Each broken tool, how the REST save answers it, and the problems both paths name.
    const cases: Array<{ name: string; steps: unknown[]; status: number; problems: string[] }> = [
      {
        name: 'duplicate-steps',
        steps: [fetch('fetch'), fetch('fetch')],
        status: 422,
        problems: ["steps[1].id: duplicate step id 'fetch'"],
      },
      {
        name: 'reserved-step',
        steps: [fetch('credentials')],
        status: 422,
        problems: ["steps[0].id: 'credentials' is a reserved name and cannot be a step id"],
      },
      {
        // A body without a required field breaks the route's published schema: 400, the same message.
        name: 'request-without-url',
        steps: [{ id: 'fetch', config: { type: 'request', method: 'GET' } }],
        status: 400,
        problems: ['steps[0].config.url: Invalid input: expected string, received undefined'],
      },
      {
        name: 'transform-without-code',
        steps: [{ id: 'shape', config: { type: 'transform' } }],
        status: 400,
        problems: ['steps[0].config.transformCode: Invalid input: expected string, received undefined'],
      },
    ];

    it.each(cases)(
      '$name: refused by REST, Ready=False InvalidSpec with the same message when applied',
      async ({ name, steps, status, problems }) => {
        const saved = await call<ErrorBody>('POST', '/v1/tools', { id: name, steps });
        expect(saved.status, saved.text).toBe(status);
        expect(saved.body.error.code).toBe(status === 422 ? 'KG_ERR_TOOL_INVALID' : 'KG_ERR_VALIDATION');
        for (const problem of problems) expect(saved.body.error.message).toContain(problem);

        await apply(name, {
          apiVersion: 'kubeglue.dev/v1alpha1',
          kind: 'Tool',
          metadata: { name },
          spec: { steps },
        });
        const tool = await toolWhen(name, 'checked', (ready) => ready !== undefined);
        expect(readyOf(tool)).toMatchObject({ status: 'False', reason: ToolReason.InvalidSpec });
        expect(readyOf(tool)?.message).toBe(`The tool spec is invalid: ${problems.join('; ')}`);
        // `kubectl get tools` shows it, and the operator carries on checking other Tools.
        expect(await bed.kubectl('get', 'tool', name)).toMatch(new RegExp(`${name}\\s+False`));
      },
    );

    it('nothing crashed: the operator still checks Tools and says nothing of undefined', async () => {
      await apply('sound', {
        apiVersion: 'kubeglue.dev/v1alpha1',
        kind: 'Tool',
        metadata: { name: 'sound' },
        spec: { steps: [fetch('fetch')] },
      });
      await toolWhen('sound', 'Ready', (ready) => ready?.status === 'True');
      expect(roles.operator.output()).not.toMatch(/Cannot read properties of undefined/);
    });
  });

  describe('a Tool whose System is not Ready', () => {
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'crm-prod-credentials' },
      stringData: { bearerToken: 'crm-token-0123' },
    };
    const system = () => ({
      apiVersion: 'kubeglue.dev/v1alpha1',
      kind: 'System',
      metadata: { name: 'crm-prod' },
      spec: {
        id: 'crm',
        url: target.url,
        environment: 'prod',
        authType: 'bearer',
        credentialsSecretRef: { name: 'crm-prod-credentials' },
      },
    });
    const crmTool = (name: string, path: string) => ({
      apiVersion: 'kubeglue.dev/v1alpha1',
      kind: 'Tool',
      metadata: { name },
      spec: { steps: [{ id: 'call', config: { url: path, systemId: 'crm' } }] },
    });
    const systemWhen = (what: string, ok: (ready: Condition | undefined) => boolean) =>
      waitFor(
        `System crm-prod: ${what}`,
        () => getObject<SystemResource>('system', 'crm-prod'),
        (s) => ok(readyOf(s)),
      );
    const notReadyMessage =
      "System crm-prod (system 'crm') is not ready: SecretNotFound: The credentials Secret 'crm-prod-credentials' does not exist";

    it('is Ready=False SystemNotReady naming the System; its runs are refused before any request, and run again once it is fixed', async () => {
      target.route('GET', '/contacts', { body: [{ name: 'Ada' }] });
      const held = target.hold('/hold');
      // crm-probe tells when the API has seen the System change, without touching /contacts.
      await apply(
        'crm',
        secret,
        system(),
        crmTool('crm-contacts', '/contacts'),
        crmTool('crm-probe', '/probe'),
      );
      await toolWhen('crm-contacts', 'Ready', (ready) => ready?.status === 'True');

      // Fill the only async slot, then queue a run of the tool while its System is still Ready.
      const blocker = await call<{ id: string }>('POST', '/v1/tools', {
        id: 'blocker',
        steps: [{ id: 'wait', config: { url: `${target.url}/hold` } }],
      });
      expect(blocker.status, JSON.stringify(blocker.body)).toBe(201);
      const blocking = await call<Run>('POST', '/v1/tools/blocker/run', { options: { async: true } });
      expect(blocking.status).toBe(202);
      await waitFor(
        'the blocker to reach its target',
        async () => held.length,
        (n) => n > 0,
        30_000,
      );
      const queued = await call<Run>('POST', '/v1/tools/crm-contacts/run', { options: { async: true } });
      expect(queued.status).toBe(202);

      await bed.kubectl('delete', 'secret', 'crm-prod-credentials');
      const missing = await systemWhen(
        'SecretNotFound',
        (ready) => ready?.reason === SystemReason.SecretNotFound,
      );
      expect(readyOf(missing)?.status).toBe('False');
      const broken = await toolWhen('crm-contacts', 'SystemNotReady', (ready) => ready?.status === 'False');
      expect(readyOf(broken)).toMatchObject({
        reason: ToolReason.SystemNotReady,
        message: `${notReadyMessage}; runs of this tool are refused until it is Ready`,
      });

      // The API watches Systems too; its copy may be a moment behind the operator's.
      await waitFor(
        'the API to refuse runs',
        () => call('POST', '/v1/tools/crm-probe/run', {}),
        (answer) => answer.status === 409,
      );
      // Sync and async runs through REST: 409, nothing stored, nothing sent.
      for (const options of [{}, { async: true }]) {
        const refused = await call<ErrorBody>('POST', '/v1/tools/crm-contacts/run', { options });
        expect(refused.status, JSON.stringify(options)).toBe(409);
        expect(refused.body.error).toMatchObject({
          code: 'KG_ERR_RUN_SYSTEM_NOT_READY',
          message: `${notReadyMessage}; the run sent no request`,
        });
      }

      // The queued ToolRun is admitted once the slot frees: its run fails with that message, unsent.
      held.shift()?.end('{}');
      await waitFor(
        'the queued run to end',
        () => runOf(queued.body.runId),
        (run) => run.status !== 'running',
        60_000,
      );
      const failed = await runOf(queued.body.runId);
      expect(failed.status).toBe('failed');
      expect(failed.error).toBe(`${notReadyMessage}; the run sent no request`);
      const toolRun = await waitFor(
        'the ToolRun to say failed',
        () => getObject<ToolRunResource>('toolrun', toolRunName(queued.body.runId)),
        (object) => object?.status?.status === 'failed',
      );
      expect(toolRun?.status?.error).toContain(notReadyMessage);
      expect(target.count('/contacts')).toBe(0);

      // The Secret is back: the System and the Tool are Ready again, and a run sends its credentials.
      await apply('secret', secret);
      await systemWhen('Ready', (ready) => ready?.status === 'True');
      await toolWhen('crm-contacts', 'Ready again', (ready) => ready?.status === 'True');
      // A refused run sends nothing, so asking until the API's copy of the System is current is safe.
      const ran = await waitFor(
        'a run to go through',
        () => call<Run>('POST', '/v1/tools/crm-contacts/run', {}),
        (answer) => answer.status !== 409,
      );
      expect(ran.status, JSON.stringify(ran.body)).toBe(200);
      expect(ran.body.status).toBe('success');
      const sent = target.requests.filter((request) => request.path === '/contacts');
      expect(sent).toHaveLength(1);
      expect(sent[0]?.headers.authorization).toBe('Bearer crm-token-0123');
    }, 180_000);
  });
});
