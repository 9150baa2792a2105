/** Settings of the repository's own tools: the benchmarks (`npm run bench`) and the test command (`npm test`). */
import { z } from 'zod';
import { nonNegativeInt, positiveInt } from './schemas.ts';
import { section, setting } from './setting.ts';

export const DEVELOPMENT = section(
  'Benchmarks and CI',
  'Read by `npm run bench` and `npm test` (bin/test and its setup, test/setup.sh, which `.ci/run` calls, ' +
    'and the tests themselves), never by a kubeglue role; they make a measurement shorter or longer, or say ' +
    'where the tests find what the setup installs and keep what they write.',
  {
    bench: {
      throughputMs: setting(
        'KUBEGLUE_BENCH_THROUGHPUT_MS',
        positiveInt,
        '20000',
        ['bench'],
        'how long each throughput measurement of the api benchmark runs',
      ),
      listRuns: setting(
        'KUBEGLUE_BENCH_LIST_RUNS',
        nonNegativeInt,
        '1000000',
        ['bench'],
        'runs seeded for api.list_runs (0 skips it: seeding takes minutes)',
      ),
      settleMs: setting(
        'KUBEGLUE_BENCH_SETTLE_MS',
        positiveInt,
        '75000',
        ['bench'],
        'how long to wait after the load for idle engine workers to retire (KUBEGLUE_WORKER_IDLE_MS and a margin)',
      ),
      profileDir: setting(
        'KUBEGLUE_BENCH_PROFILE_DIR',
        z.string().min(1).optional(),
        undefined,
        ['bench'],
        'bench/cpu-probe.ts: the server and its workers write V8 CPU profiles (.cpuprofile) into this directory',
      ),
      soakRuns: setting(
        'KUBEGLUE_BENCH_SOAK_RUNS',
        positiveInt,
        '20000',
        ['bench'],
        'runs of the soak benchmark',
      ),
      gatewayCalls: setting(
        'KUBEGLUE_BENCH_GATEWAY_CALLS',
        positiveInt,
        '1000',
        ['bench'],
        'sequential calls through a tunnel in the gateway benchmark',
      ),
      gatewayMib: setting(
        'KUBEGLUE_BENCH_GATEWAY_MIB',
        positiveInt,
        '256',
        ['bench'],
        'MiB downloaded through a tunnel in the gateway benchmark',
      ),
      dispatchRuns: setting(
        'KUBEGLUE_BENCH_DISPATCH_RUNS',
        positiveInt,
        '200',
        ['bench'],
        'async runs the operator benchmark dispatches one at a time (operator.async_dispatch)',
      ),
      realNodeRuns: setting(
        'KUBEGLUE_BENCH_REAL_NODE_RUNS',
        positiveInt,
        '50',
        ['bench'],
        'async runs the real-node benchmark dispatches one at a time (operator.real_node_dispatch; `npm run bench -- real-node`)',
      ),
    },
    ci: {
      kubeCache: setting(
        'KUBEGLUE_KUBE_CACHE',
        z.string().optional(),
        undefined,
        ['ci'],
        'npm test: where the kube-apiserver, kube-controller-manager and etcd built for the tests are cached, used when KUBEBUILDER_ASSETS is unset (unset: ~/.cache/kubeglue-kube)',
      ),
      nodeCache: setting(
        'KUBEGLUE_NODE_CACHE',
        z.string().optional(),
        undefined,
        ['ci'],
        'npm test and test/e2e/: where the real node (shared/kube-node: kubelet, kube-proxy, containerd state, images) is cached (unset: ~/.cache/kube-node)',
      ),
      promtoolCache: setting(
        'KUBEGLUE_PROMTOOL_CACHE',
        z.string().optional(),
        undefined,
        ['ci'],
        "npm test: where promtool, taken from Debian's prometheus package, is cached (unset: ~/.cache/kubeglue-promtool)",
      ),
      skipRealNode: setting(
        'KUBEGLUE_SKIP_REAL_NODE',
        z.string().optional(),
        undefined,
        ['ci'],
        'npm test: any value leaves the real node unprepared, so its suites (test/e2e/) skip, and fail under CI=true',
      ),
      chromium: setting(
        'KUBEGLUE_CHROMIUM',
        z.string().optional(),
        undefined,
        ['ci'],
        'the tests: the Chromium the dashboard tests drive (unset: CHROMIUM_PATH, else /usr/bin/chromium)',
      ),
      smbd: setting(
        'KUBEGLUE_SMBD',
        z.string().optional(),
        undefined,
        ['ci'],
        "the tests: the smbd the SMB tests start (unset: Debian's /usr/sbin/smbd)",
      ),
      testOutput: setting(
        'KUBEGLUE_TEST_OUTPUT',
        z.string().optional(),
        undefined,
        ['ci'],
        "the tests: where the dashboard tests write their screenshots, in ui/ (unset: the checkout's test-output/)",
      ),
      updateScreenshots: setting(
        'KUBEGLUE_UPDATE_SCREENSHOTS',
        z.string().optional(),
        undefined,
        ['ci'],
        "the dashboard tests: 1 also rewrites the documentation's pictures in docs/images/",
      ),
    },
  },
);
