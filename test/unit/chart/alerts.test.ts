import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { CHART_DIR, find, renderChart } from '../../support/helm.ts';
import { PROMTOOL, promtool } from '../../support/promtool.ts';

type Node = Record<string, unknown>;
interface Rule {
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** What the chart's ServiceMonitor gives the series of release kubeglue in namespace kubeglue. */
const OPERATOR = 'namespace="kubeglue",job="kubeglue-operator-metrics",pod="kubeglue-operator-0"';
const API = 'namespace="kubeglue",job="kubeglue-api-metrics",pod="kubeglue-api-0"';

interface Case {
  name: string;
  series: { series: string; values: string }[];
  at: string;
  alert: string;
  fires: Record<string, string>[];
}

/**
 * Each alert of the chart's PrometheusRule, evaluated by Prometheus' own rule engine (promtool test
 * rules) on series shaped as the api and operator export them: it fires on trouble, stays quiet
 * otherwise.
 */
const CASES: Case[] = [
  {
    name: 'no replica leads',
    series: [{ series: `kubeglue_operator_leader{${OPERATOR}}`, values: '0x10' }],
    at: '6m',
    alert: 'KubeglueOperatorNoLeader',
    fires: [{ severity: 'critical' }],
  },
  {
    name: 'the operator is not even scraped',
    series: [
      { series: `kubeglue_runs_finished_total{${API},status="success",source="api"}`, values: '0x10' },
    ],
    at: '6m',
    alert: 'KubeglueOperatorNoLeader',
    fires: [{ severity: 'critical' }],
  },
  {
    name: 'a replica leads',
    series: [
      { series: `kubeglue_operator_leader{${OPERATOR}}`, values: '1x10' },
      { series: `kubeglue_operator_leader{${OPERATOR.replace('-0"', '-1"')}}`, values: '0x10' },
    ],
    at: '6m',
    alert: 'KubeglueOperatorNoLeader',
    fires: [],
  },
  {
    name: 'half the runs fail',
    series: [
      { series: `kubeglue_runs_finished_total{${API},status="failed",source="api"}`, values: '0+2x40' },
      { series: `kubeglue_runs_finished_total{${API},status="success",source="schedule"}`, values: '0+2x40' },
    ],
    at: '35m',
    alert: 'KubeglueRunsFailing',
    fires: [{ severity: 'warning' }],
  },
  {
    name: 'one run in ten fails',
    series: [
      { series: `kubeglue_runs_finished_total{${API},status="failed",source="api"}`, values: '0+1x40' },
      { series: `kubeglue_runs_finished_total{${API},status="success",source="api"}`, values: '0+9x40' },
    ],
    at: '35m',
    alert: 'KubeglueRunsFailing',
    fires: [],
  },
  {
    name: 'a runner Pod is OOMKilled',
    series: [
      {
        series: `kubeglue_toolruns_finished_total{${OPERATOR},status="failed",reason="OOMKilled"}`,
        values: '0 0 0 1 1 1',
      },
    ],
    at: '5m',
    alert: 'KubeglueRunnerPodsFailing',
    fires: [{ severity: 'warning', reason: 'OOMKilled' }],
  },
  {
    name: 'tools fail on their own (not their Pods)',
    series: [
      {
        series: `kubeglue_toolruns_finished_total{${OPERATOR},status="failed",reason="Failed"}`,
        values: '0 1 2 3 4 5',
      },
    ],
    at: '5m',
    alert: 'KubeglueRunnerPodsFailing',
    fires: [],
  },
  {
    name: 'async runs pile up waiting for a slot',
    series: [{ series: `kubeglue_toolruns{${OPERATOR},state="waiting"}`, values: '30x20' }],
    at: '16m',
    alert: 'KubeglueAsyncRunsQueued',
    fires: [{ severity: 'warning' }],
  },
  {
    name: 'a few async runs wait briefly',
    series: [{ series: `kubeglue_toolruns{${OPERATOR},state="waiting"}`, values: '5x20' }],
    at: '16m',
    alert: 'KubeglueAsyncRunsQueued',
    fires: [],
  },
  {
    name: 'the outbox is not delivered',
    series: [{ series: `kubeglue_outbox_backlog{${API}}`, values: '500x20' }],
    at: '16m',
    alert: 'KubeglueOutboxBacklog',
    fires: [{ severity: 'warning' }],
  },
  {
    name: 'an informer hears nothing',
    series: [
      { series: `kubeglue_informer_last_event_age_seconds{${OPERATOR},kind="Tool"}`, values: '0+60x40' },
      { series: `kubeglue_informer_last_event_age_seconds{${OPERATOR},kind="ToolRun"}`, values: '30x40' },
    ],
    at: '30m',
    alert: 'KubeglueInformerStale',
    fires: [{ severity: 'warning', kind: 'Tool' }],
  },
  {
    name: 'runner Pods take minutes to start',
    series: [
      { series: `kubeglue_runner_pod_start_seconds_bucket{${OPERATOR},le="60"}`, values: '0x40' },
      { series: `kubeglue_runner_pod_start_seconds_bucket{${OPERATOR},le="120"}`, values: '0x40' },
      { series: `kubeglue_runner_pod_start_seconds_bucket{${OPERATOR},le="300"}`, values: '0+1x40' },
      { series: `kubeglue_runner_pod_start_seconds_bucket{${OPERATOR},le="+Inf"}`, values: '0+1x40' },
    ],
    at: '35m',
    alert: 'KubeglueRunnerPodsSlowToStart',
    fires: [{ severity: 'warning' }],
  },
  {
    name: 'runner Pods start in seconds',
    series: [
      { series: `kubeglue_runner_pod_start_seconds_bucket{${OPERATOR},le="5"}`, values: '0+1x40' },
      { series: `kubeglue_runner_pod_start_seconds_bucket{${OPERATOR},le="120"}`, values: '0+1x40' },
      { series: `kubeglue_runner_pod_start_seconds_bucket{${OPERATOR},le="+Inf"}`, values: '0+1x40' },
    ],
    at: '35m',
    alert: 'KubeglueRunnerPodsSlowToStart',
    fires: [],
  },
  {
    name: 'another release in the namespace',
    series: [
      {
        series: 'kubeglue_operator_leader{namespace="other",job="kubeglue-operator-metrics",pod="x"}',
        values: '1x10',
      },
      { series: `kubeglue_operator_leader{${OPERATOR}}`, values: '1x10' },
      {
        series: `kubeglue_outbox_backlog{${API.replace('kubeglue-api-metrics', 'other-api-metrics')}}`,
        values: '900x20',
      },
    ],
    at: '16m',
    alert: 'KubeglueOutboxBacklog',
    fires: [],
  },
];

describe.skipIf(!PROMTOOL)("the chart's alerts", () => {
  let dir: string;
  let rules: Rule[];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubeglue-alerts-'));
    const rendered = await renderChart({ set: { 'prometheusRule.enabled': true } });
    const groups = (find(rendered, 'PrometheusRule', 'kubeglue').spec as { groups: { rules: Rule[] }[] })
      .groups;
    rules = groups.flatMap((group) => group.rules);
    await writeFile(join(dir, 'rules.yaml'), stringify({ groups }));
    // promtool compares annotations too: the behaviour tests leave them out.
    const bare = groups.map((group) => ({
      ...group,
      rules: group.rules.map(({ annotations: _annotations, ...rule }) => rule),
    }));
    await writeFile(join(dir, 'bare-rules.yaml'), stringify({ groups: bare }));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('are valid Prometheus rules, each with a severity, a summary and a description', async () => {
    await expect(promtool(['check', 'rules', join(dir, 'rules.yaml')])).resolves.toMatch(
      /SUCCESS: 7 rules found/,
    );
    for (const rule of rules) {
      expect(rule.labels?.severity, rule.alert).toMatch(/^(critical|warning)$/);
      expect(rule.annotations?.summary, rule.alert).toBeTruthy();
      expect(rule.annotations?.description, rule.alert).toBeTruthy();
    }
  });

  it('fire on trouble and stay quiet otherwise (promtool test rules)', async () => {
    const tests = {
      rule_files: ['bare-rules.yaml'],
      evaluation_interval: '1m',
      tests: CASES.map((c) => ({
        name: c.name,
        interval: '1m',
        input_series: c.series,
        alert_rule_test: [
          {
            eval_time: c.at,
            alertname: c.alert,
            exp_alerts: c.fires.map((labels) => ({ exp_labels: labels })),
          },
        ],
      })),
    };
    await writeFile(join(dir, 'tests.yaml'), stringify(tests));
    await expect(promtool(['test', 'rules', join(dir, 'tests.yaml')])).resolves.toMatch(/SUCCESS/);
    const alerts = new Set(rules.map((rule) => rule.alert));
    // Every alert is tested firing.
    expect(new Set(CASES.filter((c) => c.fires.length > 0).map((c) => c.alert))).toEqual(alerts);
  });

  it('take their thresholds and extra labels from the values', async () => {
    const rendered = await renderChart({
      set: {
        'prometheusRule.enabled': true,
        'prometheusRule.waitingRuns': 7,
        'prometheusRule.alertLabels.team': 'integrations',
      },
    });
    const rule = (
      find(rendered, 'PrometheusRule', 'kubeglue').spec as { groups: { rules: Rule[] }[] }
    ).groups[0]?.rules.find((r) => r.alert === 'KubeglueAsyncRunsQueued');
    expect(rule?.expr).toContain('state="waiting"}) > 7');
    expect(rule?.labels).toEqual({ severity: 'warning', team: 'integrations' });
  });
});

describe('the Grafana dashboard', () => {
  it('ships in a ConfigMap the Grafana sidecar picks up, as the JSON in the chart', async () => {
    const rendered = await renderChart({ set: { 'grafanaDashboard.enabled': true } });
    const configMap = find(rendered, 'ConfigMap', 'kubeglue-dashboard');
    expect(configMap.metadata.labels?.grafana_dashboard).toBe('1');
    const shipped = JSON.parse((configMap.data as Record<string, string>)['kubeglue.json'] ?? '') as Node;
    const file = JSON.parse(await readFile(join(CHART_DIR, 'dashboards', 'kubeglue.json'), 'utf8')) as Node;
    expect(shipped).toEqual(file);
    const titles = (shipped.panels as { title: string }[]).map((panel) => panel.title);
    for (const title of [
      'Runs finished by status and source',
      'Run duration',
      'Async queue',
      'Runner Pods started',
      'Runner Pod start time',
    ])
      expect(titles).toContain(title);
  });
});
