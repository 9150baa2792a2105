import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeFaultProxy } from '../../support/kube/fault-proxy.ts';
import {
  type Pod,
  type ProcessKubelet,
  startProcessKubelet,
} from '../../support/kube/process-kubelet/kubelet.ts';
import { expandVariables, pathMapper } from '../../support/kube/process-kubelet/paths.ts';
import { createTestNamespace, describeKube, useKubeTestBed } from '../../support/kube/provided.ts';
import { isAlive } from '../../support/os.ts';

/**
 * The test image: one script whose first argument picks a behaviour. Each mode prints what the test
 * checks, so assertions read the container log.
 */
const SCRIPT = `
import { readFileSync, writeFileSync, appendFileSync, existsSync } from 'node:fs';
const [mode, ...rest] = process.argv.slice(2);
const sleep = () => setInterval(() => {}, 1000);
switch (mode) {
  case 'inspect': {
    const [tokenFile, messageFile] = rest;
    console.log(JSON.stringify({
      env: { PLAIN: process.env.PLAIN, SECRET: process.env.SECRET, POD: process.env.POD, TOKEN_FILE: process.env.TOKEN_FILE,
             FROM_ENV: process.env.FROM_ENV, EXPANDED: process.env.EXPANDED, TMPDIR: process.env.TMPDIR, HOME: process.env.HOME },
      tokenFile, token: readFileSync(tokenFile, 'utf8'), viaEnv: readFileSync(process.env.TOKEN_FILE, 'utf8'),
      cwd: process.cwd(),
    }));
    writeFileSync(messageFile, 'all good');
    break;
  }
  case 'fail':
    console.log('about to fail');
    writeFileSync(rest[0], 'bad input: the answer is not 41');
    process.exit(3);
  case 'noisy-fail':
    for (let i = 1; i <= 100; i++) console.log('line ' + i);
    console.error('fatal: out of ideas');
    process.exit(2);
  case 'sleep':
    console.log('sleeping');
    sleep();
    break;
  case 'graceful':
    process.on('SIGTERM', () => {
      writeFileSync(rest[0], 'got SIGTERM');
      setTimeout(() => process.exit(0), 200);
    });
    console.log('ready');
    sleep();
    break;
  case 'stubborn':
    process.on('SIGTERM', () => console.log('ignoring SIGTERM'));
    console.log('ready');
    sleep();
    break;
  case 'write':
    writeFileSync(rest[0], rest[1]);
    break;
  case 'cat':
    for (const file of rest) console.log(readFileSync(file, 'utf8'));
    break;
  case 'tmp-probe': {
    // Like the runner: os.tmpdir() and a literal /tmp path must be the same (emptyDir) directory.
    writeFileSync(process.env.TMPDIR + '/probe', 'probe-ok');
    writeFileSync(process.env.MESSAGE_PATH, readFileSync(rest[0], 'utf8'));
    break;
  }
  case 'flaky': {
    // The counter lives in the Pod's /tmp, which survives container restarts.
    const counter = rest[0];
    const runs = existsSync(counter) ? Number(readFileSync(counter, 'utf8')) + 1 : 1;
    writeFileSync(counter, String(runs));
    console.log('run ' + runs);
    process.exit(runs < 2 ? 1 : 0);
  }
}
`;

const IMAGE = 'kubeglue-test/script:1';
/** PROCESS_KUBELET_LOG=1 shows what the kubelets retry and why. */
const debugLog = process.env.PROCESS_KUBELET_LOG
  ? (line: string) => console.error(`[kubelet] ${line}`)
  : undefined;

describe('process kubelet path mapping', () => {
  const map = pathMapper([
    { containerPath: '/etc/app/', hostPath: '/w/pod/volumes/app' },
    { containerPath: '/etc/app/certs', hostPath: '/w/pod/volumes/certs' },
    { containerPath: '/tmp', hostPath: '/tmp/kubelet/pod/tmp' },
  ]);

  it('rewrites mount paths where they start a path, nested mounts first', () => {
    expect(map('/etc/app/config.json')).toBe('/w/pod/volumes/app/config.json');
    expect(map('--config=/etc/app/certs/ca.pem')).toBe('--config=/w/pod/volumes/certs/ca.pem');
    expect(map('/etc/app')).toBe('/w/pod/volumes/app');
    expect(map('/tmp/a:/tmp/b /etc/app')).toBe(
      '/tmp/kubelet/pod/tmp/a:/tmp/kubelet/pod/tmp/b /w/pod/volumes/app',
    );
  });

  it('leaves look-alikes and already mapped paths alone', () => {
    expect(map('/etc/application')).toBe('/etc/application');
    expect(map('/var/tmp/x')).toBe('/var/tmp/x');
    expect(map('/tmpfile')).toBe('/tmpfile');
    expect(map(map('/tmp/x'))).toBe('/tmp/kubelet/pod/tmp/kubelet/pod/tmp/x');
  });

  it('expands $(VAR) like Kubernetes', () => {
    const vars: Record<string, string> = { A: 'x', B: 'y' };
    const expand = (text: string) => expandVariables(text, (name) => vars[name]);
    expect(expand('$(A)-$(B)')).toBe('x-y');
    expect(expand('$(MISSING) $$(A) $ $(')).toBe('$(MISSING) $(A) $ $(');
  });
});

describeKube('the process kubelet', () => {
  const bed = useKubeTestBed('process-kubelet');
  let kubelet: ProcessKubelet;
  let ns: string;

  beforeAll(async () => {
    const script = join(bed.dir, 'script.mjs');
    await writeFile(script, SCRIPT);
    ns = bed.namespace.name;
    kubelet = await startProcessKubelet({
      url: bed.kube.url,
      caPem: bed.kube.caPem,
      token: bed.kube.adminToken,
      nodeName: `process-kubelet-${randomBytes(3).toString('hex')}`,
      namespaces: [ns],
      images: { [IMAGE]: [process.execPath, script] },
      heartbeatMs: 1_000,
      restartBackoffMs: { initial: 100, max: 1_000 },
      log: debugLog,
    });
  });

  afterAll(async () => {
    await kubelet?.stop();
    if (kubelet) await bed.kube.request(`/api/v1/nodes/${kubelet.nodeName}`, { method: 'DELETE' });
  });

  async function createPod(name: string, spec: Record<string, unknown>): Promise<void> {
    const response = await bed.kube.request(`/api/v1/namespaces/${ns}/pods`, {
      body: { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { restartPolicy: 'Never', ...spec } },
    });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
  }

  const phase = (wanted: string) => (pod: Pod | undefined) => pod?.status?.phase === wanted;
  const container = (pod: Pod | undefined) => pod?.status?.containerStatuses?.[0];
  const running = (pod: Pod | undefined) => container(pod)?.state.running !== undefined;

  it('registers a Ready node', async () => {
    const node = await bed.kube.request(`/api/v1/nodes/${kubelet.nodeName}`);
    const status = (node.body as { status: { conditions: { type: string; status: string }[] } }).status;
    expect(status.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
  });

  it('runs a Pod with its env, Secret key and Secret volume, and reports Succeeded/Completed', async () => {
    const secret = await bed.kube.request(`/api/v1/namespaces/${ns}/secrets`, {
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'creds' },
        stringData: { token: 's3cret', api: 'k' },
      },
    });
    expect(secret.status).toBe(201);
    await createPod('inspect', {
      volumes: [{ name: 'creds', secret: { secretName: 'creds' } }],
      containers: [
        {
          name: 'main',
          image: IMAGE,
          args: ['inspect', '/etc/creds/token', '/dev/termination-log'],
          workingDir: '/tmp/work',
          env: [
            { name: 'PLAIN', value: 'hello' },
            { name: 'SECRET', valueFrom: { secretKeyRef: { name: 'creds', key: 'api' } } },
            { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            { name: 'TOKEN_FILE', value: '/etc/creds/token' },
            { name: 'EXPANDED', value: '$(PLAIN)-$(POD)' },
          ],
          envFrom: [{ prefix: 'FROM_', secretRef: { name: 'creds' } }],
          volumeMounts: [{ name: 'creds', mountPath: '/etc/creds', readOnly: true }],
        },
      ],
    });
    const pod = await kubelet.waitFor(ns, 'inspect', phase('Succeeded'));
    const terminated = container(pod)?.state.terminated;
    expect(terminated).toMatchObject({ exitCode: 0, reason: 'Completed', message: 'all good' });
    expect(pod?.spec.nodeName).toBe(kubelet.nodeName);
    expect(pod?.status?.podIP).toBe('127.0.0.1');
    expect(pod?.status?.startTime).toBeTruthy();
    expect(pod?.status?.conditions?.find((c) => c.type === 'PodScheduled')?.status).toBe('True');

    const output = JSON.parse(await kubelet.logs(ns, 'inspect'));
    const podDir = kubelet.pods().find((p) => p.name === 'inspect')?.dir ?? '';
    expect(output.token).toBe('s3cret');
    expect(output.viaEnv).toBe('s3cret');
    expect(output.tokenFile).toBe(join(podDir, 'volumes/creds/token'));
    expect(output.env).toMatchObject({
      PLAIN: 'hello',
      SECRET: 'k',
      POD: 'inspect',
      EXPANDED: 'hello-inspect',
      TMPDIR: join(podDir, 'tmp'),
    });
    expect(output.env.HOME.startsWith(podDir)).toBe(true);
    expect(output.cwd).toBe(join(podDir, 'tmp/work'));
  });

  it('reports a non-zero exit as Failed with the termination message', async () => {
    await createPod('fails', {
      containers: [{ name: 'main', image: IMAGE, args: ['fail', '/dev/termination-log'] }],
    });
    const pod = await kubelet.waitFor(ns, 'fails', phase('Failed'));
    expect(container(pod)?.state.terminated).toMatchObject({
      exitCode: 3,
      reason: 'Error',
      message: 'bad input: the answer is not 41',
    });
    expect(await kubelet.logs(ns, 'fails')).toBe('about to fail\n');
  });

  it('falls back to the log tail with FallbackToLogsOnError', async () => {
    await createPod('noisy', {
      containers: [
        {
          name: 'main',
          image: IMAGE,
          args: ['noisy-fail'],
          terminationMessagePolicy: 'FallbackToLogsOnError',
        },
      ],
    });
    const pod = await kubelet.waitFor(ns, 'noisy', phase('Failed'));
    const message = container(pod)?.state.terminated?.message ?? '';
    expect(message.endsWith('line 100\nfatal: out of ideas\n')).toBe(true);
    expect(message.split('\n').filter(Boolean)).toHaveLength(80);
    expect(message).not.toContain('line 21\n');
  });

  it('restarts an OnFailure container with backoff', async () => {
    await createPod('flaky', {
      restartPolicy: 'OnFailure',
      containers: [{ name: 'main', image: IMAGE, args: ['flaky', '/tmp/runs'] }],
    });
    const pod = await kubelet.waitFor(ns, 'flaky', phase('Succeeded'));
    expect(container(pod)?.restartCount).toBe(1);
    expect(container(pod)?.lastState.terminated).toMatchObject({ exitCode: 1, reason: 'Error' });
    expect(await kubelet.logs(ns, 'flaky')).toBe('run 2\n');
  });

  it('fails a Pod past its activeDeadlineSeconds with DeadlineExceeded', async () => {
    await createPod('deadline', {
      activeDeadlineSeconds: 2,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: IMAGE, args: ['sleep'] }],
    });
    const pod = await kubelet.waitFor(ns, 'deadline', (p) => p?.status?.reason === 'DeadlineExceeded');
    expect(pod?.status?.phase).toBe('Failed');
    expect(pod?.status?.message).toBe('Pod was active on the node longer than the specified deadline');
    const done = await kubelet.waitFor(ns, 'deadline', (p) => container(p)?.state.terminated !== undefined);
    expect(container(done)?.state.terminated?.exitCode).toBe(143);
  });

  it('deletes gracefully: SIGTERM to the process, then the Pod is removed', async () => {
    // /tmp is the Pod's own /tmp: the marker lands in the Pod dir, which outlives the Pod.
    await createPod('graceful', {
      containers: [{ name: 'main', image: IMAGE, args: ['graceful', '/tmp/sigterm-marker'] }],
    });
    await kubelet.waitFor(ns, 'graceful', running);
    const podDir = kubelet.pods().find((p) => p.name === 'graceful')?.dir ?? '';
    // The process must have installed its handler: wait for its first output.
    await expect.poll(() => kubelet.logs(ns, 'graceful')).toBe('ready\n');
    const deleted = await bed.kube.request(`/api/v1/namespaces/${ns}/pods/graceful`, {
      method: 'DELETE',
      body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 10 },
    });
    expect(deleted.status).toBe(200);
    const terminating = await kubelet.waitFor(
      ns,
      'graceful',
      (p) => !p || container(p)?.state.terminated !== undefined,
    );
    if (terminating) expect(container(terminating)?.state.terminated).toMatchObject({ exitCode: 0 });
    await kubelet.waitFor(ns, 'graceful', (p) => p === undefined);
    expect(await readFile(join(podDir, 'tmp/sigterm-marker'), 'utf8')).toBe('got SIGTERM');
  });

  it('oomKill reports OOMKilled with exit code 137', async () => {
    await createPod('oom', {
      containers: [
        { name: 'main', image: IMAGE, args: ['sleep'], resources: { limits: { memory: '64Mi' } } },
      ],
    });
    await kubelet.waitFor(ns, 'oom', running);
    expect(kubelet.pods().find((p) => p.name === 'oom')?.memoryLimits).toEqual({ main: 64 * 2 ** 20 });
    await kubelet.oomKill(ns, 'oom');
    const pod = await kubelet.waitFor(ns, 'oom', phase('Failed'));
    expect(container(pod)?.state.terminated).toMatchObject({ exitCode: 137, reason: 'OOMKilled' });
  });

  it('leaves a Pod with an unknown image Pending in ImagePullBackOff', async () => {
    await createPod('no-image', { containers: [{ name: 'main', image: 'registry.invalid/nope:1' }] });
    const pod = await kubelet.waitFor(
      ns,
      'no-image',
      (p) => container(p)?.state.waiting?.reason === 'ImagePullBackOff',
    );
    expect(pod?.status?.phase).toBe('Pending');
    expect(pod?.spec.nodeName).toBe(kubelet.nodeName);
  });

  it('evict fails the Pod with reason Evicted', async () => {
    await createPod('evicted', { containers: [{ name: 'main', image: IMAGE, args: ['sleep'] }] });
    await kubelet.waitFor(ns, 'evicted', running);
    await kubelet.evict(ns, 'evicted');
    const pod = await kubelet.waitFor(ns, 'evicted', phase('Failed'));
    expect(pod?.status).toMatchObject({
      reason: 'Evicted',
      message: 'The node was low on resource: memory.',
    });
    expect(kubelet.pods().find((p) => p.name === 'evicted')?.pids).toEqual({});
  });

  it('holds Pods back with neverStart and unschedulable', async () => {
    kubelet.neverStart((pod) => pod.metadata.name === 'held');
    kubelet.unschedulable((pod) => pod.metadata.name === 'homeless');
    try {
      await createPod('held', { containers: [{ name: 'main', image: IMAGE, args: ['sleep'] }] });
      await createPod('homeless', { containers: [{ name: 'main', image: IMAGE, args: ['sleep'] }] });
      const held = await kubelet.waitFor(
        ns,
        'held',
        (p) => container(p)?.state.waiting?.reason === 'ImagePullBackOff',
      );
      expect(held?.spec.nodeName).toBe(kubelet.nodeName);
      const homeless = await kubelet.waitFor(ns, 'homeless', (p) =>
        Boolean(
          p?.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable'),
        ),
      );
      expect(homeless?.spec.nodeName).toBeUndefined();
    } finally {
      kubelet.neverStart(null);
      kubelet.unschedulable(null);
    }
    await kubelet.waitFor(ns, 'held', running);
    await kubelet.waitFor(ns, 'homeless', running);
  });

  it('waits with CreateContainerConfigError until a missing Secret appears', async () => {
    await createPod('late-secret', {
      containers: [
        {
          name: 'main',
          image: IMAGE,
          args: ['inspect', '/dev/null', '/dev/termination-log'],
          env: [
            { name: 'SECRET', valueFrom: { secretKeyRef: { name: 'late', key: 'api' } } },
            { name: 'TOKEN_FILE', value: '/dev/null' },
          ],
        },
      ],
    });
    const waiting = await kubelet.waitFor(
      ns,
      'late-secret',
      (p) => container(p)?.state.waiting?.reason === 'CreateContainerConfigError',
    );
    expect(container(waiting)?.state.waiting?.message).toBe('secret "late" not found');
    expect(waiting?.status?.phase).toBe('Pending');
    await bed.kube.request(`/api/v1/namespaces/${ns}/secrets`, {
      body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'late' }, stringData: { api: 'finally' } },
    });
    await kubelet.waitFor(ns, 'late-secret', phase('Succeeded'));
    expect(JSON.parse(await kubelet.logs(ns, 'late-secret')).env.SECRET).toBe('finally');
  });

  it('runs init containers first and shares emptyDir and ConfigMap volumes, also for a Pod created bound', async () => {
    const configMap = await bed.kube.request(`/api/v1/namespaces/${ns}/configmaps`, {
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'app' },
        data: { 'app.json': '{"a":1}' },
      },
    });
    expect(configMap.status).toBe(201);
    await createPod('with-init', {
      nodeName: kubelet.nodeName,
      volumes: [
        { name: 'shared', emptyDir: {} },
        { name: 'config', configMap: { name: 'app' } },
      ],
      initContainers: [
        {
          name: 'prepare',
          image: IMAGE,
          args: ['write', '/shared/greeting', 'hello from init'],
          volumeMounts: [{ name: 'shared', mountPath: '/shared' }],
        },
      ],
      containers: [
        {
          name: 'main',
          image: IMAGE,
          args: ['cat', '/shared/greeting', '/config/app.json'],
          volumeMounts: [
            { name: 'shared', mountPath: '/shared' },
            { name: 'config', mountPath: '/config' },
          ],
        },
      ],
    });
    const pod = await kubelet.waitFor(ns, 'with-init', phase('Succeeded'));
    expect(pod?.status?.initContainerStatuses?.[0]?.state.terminated).toMatchObject({
      exitCode: 0,
      reason: 'Completed',
    });
    expect(pod?.status?.conditions?.find((c) => c.type === 'Initialized')?.status).toBe('True');
    expect(await kubelet.logs(ns, 'with-init', 'main')).toBe('hello from init\n{"a":1}\n');
  });

  it('SIGKILLs a container that ignores SIGTERM once the grace period is over', async () => {
    await createPod('stubborn', { containers: [{ name: 'main', image: IMAGE, args: ['stubborn'] }] });
    await kubelet.waitFor(ns, 'stubborn', running);
    await expect.poll(() => kubelet.logs(ns, 'stubborn')).toBe('ready\n');
    const started = Date.now();
    await bed.kube.request(`/api/v1/namespaces/${ns}/pods/stubborn`, {
      method: 'DELETE',
      body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 1 },
    });
    const last = await kubelet.waitFor(ns, 'stubborn', (p) => container(p)?.state.terminated !== undefined);
    expect(container(last)?.state.terminated).toMatchObject({ exitCode: 137, reason: 'Error' });
    await kubelet.waitFor(ns, 'stubborn', (p) => p === undefined);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(await kubelet.logs(ns, 'stubborn')).toBe('ready\nignoring SIGTERM\n');
  });

  it('nodeLost kills silently and stops the heartbeat; nodeRestored reports the lost container', async () => {
    await createPod('lost', { containers: [{ name: 'main', image: IMAGE, args: ['sleep'] }] });
    await kubelet.waitFor(ns, 'lost', running);
    const pid = kubelet.pods().find((p) => p.name === 'lost')?.pids.main ?? 0;
    const heartbeat = async () => {
      const node = await bed.kube.request(`/api/v1/nodes/${kubelet.nodeName}`);
      const conditions = (
        node.body as { status: { conditions: { type: string; lastHeartbeatTime: string }[] } }
      ).status.conditions;
      return conditions.find((c) => c.type === 'Ready')?.lastHeartbeatTime;
    };
    kubelet.nodeLost();
    try {
      await expect.poll(() => isAlive(pid)).toBe(false);
      const before = await heartbeat();
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect(await heartbeat()).toBe(before);
      expect(kubelet.pod(ns, 'lost')?.status?.phase).toBe('Running');
    } finally {
      await kubelet.nodeRestored();
    }
    const pod = await kubelet.waitFor(ns, 'lost', phase('Failed'));
    expect(container(pod)?.state.terminated).toMatchObject({
      exitCode: 137,
      reason: 'ContainerStatusUnknown',
    });
    await expect.poll(heartbeat, { timeout: 5_000 }).not.toBe(undefined);
  });

  it('runs a Pod shaped like the runner Pod (emptyDir /tmp, message path from env)', async () => {
    await createPod('runner-shaped', {
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      activeDeadlineSeconds: 60,
      terminationGracePeriodSeconds: 5,
      securityContext: { runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001 },
      volumes: [{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }],
      containers: [
        {
          name: 'runner',
          image: IMAGE,
          args: ['tmp-probe', '/tmp/probe'],
          env: [{ name: 'MESSAGE_PATH', value: '/dev/termination-log' }],
          resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '1', memory: '256Mi' } },
          securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false },
          volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'FallbackToLogsOnError',
        },
      ],
    });
    const pod = await kubelet.waitFor(ns, 'runner-shaped', phase('Succeeded'));
    expect(container(pod)?.state.terminated).toMatchObject({ exitCode: 0, message: 'probe-ok' });
    const podDir = kubelet.pods().find((p) => p.name === 'runner-shaped')?.dir ?? '';
    expect(await readFile(join(podDir, 'volumes/tmp/probe'), 'utf8')).toBe('probe-ok');
  });

  it('reports a command that cannot start as StartError', async () => {
    await createPod('no-binary', {
      containers: [{ name: 'main', image: IMAGE, command: ['/nonexistent/tool'] }],
    });
    const pod = await kubelet.waitFor(ns, 'no-binary', phase('Failed'));
    expect(container(pod)?.state.terminated).toMatchObject({ exitCode: 128, reason: 'StartError' });
    expect(container(pod)?.state.terminated?.message).toContain('/nonexistent/tool');
  });

  it('keeps working through conflicts, expired and dropped watches', async () => {
    const other = await createTestNamespace(bed.kube, 'process-kubelet-faults');
    const proxy = await startKubeFaultProxy(bed.kube);
    const flaky = await startProcessKubelet({
      url: proxy.url,
      caPem: bed.kube.caPem,
      token: bed.kube.tokens['kubeglue-kubelet'] ?? bed.kube.adminToken,
      nodeName: `process-kubelet-faults-${randomBytes(3).toString('hex')}`,
      namespaces: [other.name],
      images: { [IMAGE]: [process.execPath, join(bed.dir, 'script.mjs')] },
      heartbeatMs: 1_000,
      log: debugLog,
    });
    try {
      proxy.faults.conflictEveryNthWrite = 3;
      proxy.faults.goneOnWatch = 2;
      proxy.faults.dropWatchesEveryMs = 300;
      const names = ['one', 'two', 'three'];
      for (const [index, name] of names.entries()) {
        const response = await bed.kube.request(`/api/v1/namespaces/${other.name}/pods`, {
          body: {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name },
            spec: {
              restartPolicy: 'Never',
              containers: [
                {
                  name: 'main',
                  image: IMAGE,
                  args: index === 2 ? ['fail', '/dev/termination-log'] : ['cat'],
                },
              ],
            },
          },
        });
        expect(response.status).toBe(201);
      }
      for (const name of names) {
        const pod = await flaky.waitFor(
          other.name,
          name,
          (p) => p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed',
        );
        expect(pod?.spec.nodeName).toBe(flaky.nodeName);
        expect(pod?.status?.phase).toBe(name === 'three' ? 'Failed' : 'Succeeded');
      }
      expect(proxy.requests.some((r) => r.injected === 'conflict')).toBe(true);
      expect(proxy.requests.some((r) => r.injected === 'gone')).toBe(true);
    } finally {
      await flaky.stop();
      await proxy.stop();
      await bed.kube.request(`/api/v1/nodes/${flaky.nodeName}`, { method: 'DELETE' });
      await other.delete();
    }
  });
});
