/** The log line every role writes (contract/log.ts): pino's shape, one JSON object per line, by level. */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../contract/log.ts';

describe('a role logger', () => {
  it('writes debug and info to stdout, warn and worse to stderr, one JSON object per line', () => {
    const out: string[] = [];
    const err: string[] = [];
    const log = createLogger('operator', {
      stdout: { write: (text: string) => out.push(text) },
      stderr: { write: (text: string) => err.push(text) },
      now: () => 1_764_126_000_000,
    });
    log('ready on http://0.0.0.0:8080');
    log.debug('stream 7 → crm');
    log.warn('ExperimentalWarning: x', { code: 'X1' });
    log.error('line one\nline two');
    log.fatal('invalid configuration');
    expect(out.every((line) => line.endsWith('\n') && line.indexOf('\n') === line.length - 1)).toBe(true);
    expect(err.every((line) => line.indexOf('\n') === line.length - 1)).toBe(true);
    expect(out.map((line) => JSON.parse(line))).toEqual([
      {
        level: 30,
        time: 1_764_126_000_000,
        pid: process.pid,
        hostname: expect.any(String),
        role: 'operator',
        msg: 'ready on http://0.0.0.0:8080',
      },
      expect.objectContaining({ level: 20, msg: 'stream 7 → crm' }),
    ]);
    expect(err.map((line) => JSON.parse(line))).toEqual([
      expect.objectContaining({ level: 40, code: 'X1', msg: 'ExperimentalWarning: x' }),
      expect.objectContaining({ level: 50, msg: 'line one\nline two' }),
      expect.objectContaining({ level: 60, role: 'operator', msg: 'invalid configuration' }),
    ]);
  });
});
