/**
 * The ToolRun's Duration column reads as people read durations (`1.2s`, `3m4s`), from status.duration,
 * which the operator writes beside the number status.durationMs.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CRD_DIR } from '../../../contract/generate.ts';
import { humanDuration } from '../../../contract/resources/duration.ts';

describe('a ToolRun’s duration', () => {
  it('is written for people: milliseconds, tenths of seconds, then minutes, hours and days', () => {
    expect(
      [0, 340, 999, 1_000, 1_234, 9_960, 12_500, 59_999, 60_000, 184_000, 3_723_000, 183_600_000].map(
        humanDuration,
      ),
    ).toEqual([
      '0ms',
      '340ms',
      '999ms',
      '1s',
      '1.2s',
      '9.9s',
      '12.5s',
      '59.9s',
      '1m0s',
      '3m4s',
      '1h2m3s',
      '2d3h',
    ]);
  });

  it('is the Duration column of kubectl get toolruns, a string, with the milliseconds still in the status', () => {
    const crd = parse(
      readFileSync(join(import.meta.dirname, '../../..', CRD_DIR, 'kubeglue.dev_toolruns.yaml'), 'utf8'),
    );
    const version = crd.spec.versions[0];
    const columns = version.additionalPrinterColumns as { name: string; type: string; jsonPath: string }[];
    expect(columns.find((c) => c.name === 'Duration')).toMatchObject({
      type: 'string',
      jsonPath: '.status.duration',
    });
    const status = version.schema.openAPIV3Schema.properties.status.properties;
    expect(status.duration.type).toBe('string');
    expect(status.durationMs.type).toBe('integer');
  });
});
