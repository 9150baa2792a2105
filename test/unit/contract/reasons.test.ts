/**
 * The reasons a user reads in `kubectl describe` are declared once (contract/reasons.ts) and docs/reasons.md
 * is generated from them. The writers take only declared reasons (TypeScript holds them to it: the
 * `@ts-expect-error` lines below fail the type check the day an undeclared reason is accepted); every
 * declared reason is one the code writes; the page shows each with where it appears and what to do.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedFiles } from '../../../contract/generate.ts';
import {
  AdmissionReason,
  eventType,
  REASON_GROUPS,
  RunReason,
  ScheduleEventReason,
  ScheduleReason,
  ScheduleStatusReason,
  SystemLinkedReason,
  SystemReason,
  TickReason,
  ToolReason,
  ToolRunEventReason,
} from '../../../contract/reasons.ts';
import { reasonsPage, tableCell } from '../../../contract/reasons-page.ts';
import { type DesiredCondition, setCondition } from '../../../operator/conditions.ts';
import { createEventRecorder, type InvolvedObject } from '../../../operator/events.ts';

const REPO = join(import.meta.dirname, '..', '..', '..');

/** Each set of reasons under the name code uses it by. */
const DECLARED: Record<string, Readonly<Record<string, string>>> = {
  ToolReason,
  SystemReason,
  SystemLinkedReason,
  AdmissionReason,
  RunReason,
  ToolRunEventReason,
  ScheduleReason,
  ScheduleStatusReason,
  TickReason,
  ScheduleEventReason,
};

/** The code that writes reasons (no tests, no declaration), as one text. */
function writers(): string {
  const files = ['operator', 'schedules', 'runs', 'systems', 'api'].flatMap((folder) =>
    readdirSync(join(REPO, folder), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
      .map((entry) => join(entry.parentPath, entry.name)),
  );
  return files.map((file) => readFileSync(file, 'utf8')).join('\n');
}

const page = reasonsPage();

describe('the reasons a user reads on a resource', () => {
  it('are written only as declared: the condition and Event writers refuse any other word', async () => {
    const now = new Date('2026-03-01T10:00:00Z');
    const [ready] = setCondition(
      undefined,
      { type: 'Ready', reason: ToolReason.CompileError, message: 'x' },
      now,
    );
    // The status is the one the reason is declared with, not chosen beside it.
    expect(ready).toMatchObject({ type: 'Ready', status: 'False', reason: 'CompileError' });
    // @ts-expect-error an undeclared reason does not compile
    const broken: DesiredCondition = { type: 'Ready', reason: 'Broken', message: 'x' };
    expect(() => setCondition(undefined, broken, now)).toThrow(
      'reason Broken is not declared for condition Ready',
    );
    const queued = AdmissionReason.AdmissionLimit;
    // @ts-expect-error nor does the reason of another condition
    const crossed: DesiredCondition = { type: 'Succeeded', reason: queued, message: 'x' };
    expect(() => setCondition(undefined, crossed, now)).toThrow(
      'reason AdmissionLimit is not declared for condition Succeeded',
    );

    const toolRun: InvolvedObject<'ToolRun'> = {
      apiVersion: 'kubeglue.dev/v1alpha1',
      kind: 'ToolRun',
      metadata: { name: 'run-a', namespace: 'ns' },
    };
    const recorder = createEventRecorder({
      sink: { create: async (e) => e, patch: async () => ({}) as never },
    });
    // @ts-expect-error a ToolSchedule's Event reason is not one of a ToolRun
    await expect(recorder.record(toolRun, ScheduleEventReason.MissedSchedule, 'x')).rejects.toThrow(
      'reason MissedSchedule is not declared for Events of a ToolRun',
    );
    expect(eventType('ToolRun', ToolRunEventReason.PodFailed)).toBe('Warning');
  });

  it('are each written by the code, so the page lists nothing a user never sees', () => {
    // Every declared set is looked for (a new one joins DECLARED above).
    const sets = Object.values(DECLARED).map((names) => Object.keys(names).join());
    for (const group of REASON_GROUPS) expect(sets).toContain(group.entries.map((e) => e.name).join());
    expect(sets).toHaveLength(REASON_GROUPS.length);
    const code = writers();
    const unused = Object.entries(DECLARED).flatMap(([set, names]) =>
      Object.keys(names)
        .map((name) => `${set}.${name}`)
        .filter((use) => !new RegExp(`\\b${use.replace('.', '\\.')}\\b`).test(code)),
    );
    expect(unused).toEqual([]);
  });

  it('are listed in docs/reasons.md, each once in its place with its status or Event type, what it means and what to do', () => {
    for (const group of REASON_GROUPS) {
      const start = page.indexOf(`### ${group.title}\n\n${group.shown}`, page.indexOf(`## ${group.kind}\n`));
      expect(start, `${group.kind}: ${group.title}`).toBeGreaterThan(0);
      const next = page.indexOf('\n### ', start + 1);
      const section = page.slice(start, next < 0 ? undefined : next);
      for (const entry of group.entries) {
        const rows = section.split('\n').filter((line) => line.startsWith(`| \`${entry.name}\` |`));
        expect(rows, `${group.kind} ${group.title} ${entry.name}`).toHaveLength(1);
        const cells = (rows[0] as string).split(' | ');
        if (group.condition) expect(cells).toContain(entry.status);
        if (group.events) expect(cells).toContain(entry.eventType);
        expect(rows[0]).toContain(`| ${tableCell(entry.means)} | ${tableCell(entry.action)} |`);
      }
    }
    expect(page).toContain(
      "| `OOMKilled` | False | The runner Pod exceeded its memory limit (the message names it). | Raise the runner's memory limit (KUBEGLUE_RUNNER_MEMORY_LIMIT;",
    );
    expect(page).toContain('| `MissedSchedule` | Warning |');
    // The page is generated with the others, so the drift test (crd-generate) holds the committed copy to it.
    expect(generatedFiles().get(join('docs', 'reasons.md'))).toBe(page);
  });

  it('each say what to do, and a Warning never answers "nothing"', () => {
    for (const group of REASON_GROUPS) {
      for (const entry of group.entries) {
        const where = `${group.kind} ${group.title} ${entry.name}`;
        expect(entry.means.trim(), where).toMatch(/\S.*\.$/s);
        expect(entry.action.trim(), where).toMatch(/\S.*\.$/s);
        expect(entry.action, where).not.toBe(entry.means);
        if (entry.eventType === 'Warning') expect(entry.action, where).not.toMatch(/^Nothing/);
      }
    }
    // Where the same word is a reason of two places, each place says what it means there.
    const tickDeadline = REASON_GROUPS.find((g) => g.title === '`status.lastTick.reason`')?.entries.find(
      (e) => e.name === 'DeadlineExceeded',
    );
    expect(tickDeadline?.means).toContain('startingDeadlineSeconds');
  });
});
