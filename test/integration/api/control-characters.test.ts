/**
 * Ids and names are printed: by the CLI, in logs, in kubectl's columns. The API refuses control
 * characters in them (contract/text.ts), which a terminal would take as commands: `ESC ]52;…` writes the
 * clipboard, `ESC [2J` clears the screen, `\x9b` is a one-byte CSI. A description (a tool's instruction)
 * may hold tabs and line breaks, nothing else of the kind.
 */
import { describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import { useTestApi } from '../../support/embedded.ts';

const CLIPBOARD = '\x1b]52;c;ZWNobyBvd25lZA==\x07';
const HOSTILE = [
  ['ESC (a clipboard write)', `evil${CLIPBOARD}`],
  ['ESC (clear the screen)', 'evil\x1b[2J'],
  ['a C1 CSI', 'evil\x9b2J'],
  ['DEL', 'evil\x7f'],
  ['NUL', 'evil\x00'],
  ['a line break', 'two\nlines'],
  // Trojan Source: shown right to left, "evil\u202etxt.exe" reads "evilexe.txt".
  ['a bidi override', 'evil\u202etxt.exe'],
  ['a right-to-left mark', 'evil\u200f'],
] as const;

describe('the API refuses control characters in ids and names', () => {
  const api = useTestApi();
  const step = { id: 'get', config: { url: 'http://127.0.0.1:9/x' } };

  const refused = async (method: string, path: string, body: unknown, field: string) => {
    const answer = await api.call<ErrorBody>(method, path, { body });
    expect(answer.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(400);
    expect(answer.body.error.code).toBe('KG_ERR_VALIDATION');
    expect(answer.body.error.issues?.map((issue) => issue.path.join('.'))).toContain(field);
    expect(answer.text).toContain('control characters');
  };

  it.each(HOSTILE)('a tool id with %s', async (_what, text) => {
    await refused('POST', '/v1/tools', { id: text, steps: [step] }, 'id');
    expect((await api.call('GET', `/v1/tools/${encodeURIComponent(text)}`)).status).toBe(404);
  });

  it.each(HOSTILE)('a tool name with %s, on create and on update', async (_what, text) => {
    await refused('POST', '/v1/tools', { id: 'named', name: text, steps: [step] }, 'name');
    expect((await api.call('POST', '/v1/tools', { body: { id: 'named', steps: [step] } })).status).toBe(201);
    await refused('PUT', '/v1/tools/named', { name: text }, 'name');
    expect((await api.call('DELETE', '/v1/tools/named')).status).toBe(200);
  });

  it('a tool instruction with ESC, C1 or DEL; tabs and line breaks are kept', async () => {
    for (const text of ['evil\x1b[2J', 'evil\x9b2J', 'evil\x7f', `evil${CLIPBOARD}`]) {
      await refused(
        'POST',
        '/v1/tools',
        { id: 'described', instruction: text, steps: [step] },
        'instruction',
      );
    }
    const instruction = 'Reads the todos.\n\tThen:\r\n- keeps the open ones';
    const created = await api.call<{ instruction: string }>('POST', '/v1/tools', {
      body: { id: 'described', instruction, steps: [step] },
    });
    expect(created.status).toBe(201);
    expect(created.body.instruction).toBe(instruction);
  });

  it.each(HOSTILE)('a system name with %s', async (_what, text) => {
    await refused(
      'POST',
      '/v1/systems',
      { id: 'named_system', name: text, url: 'http://127.0.0.1:9' },
      'name',
    );
  });

  it('a schedule whose cron expression or tool id holds ESC', async () => {
    expect((await api.call('POST', '/v1/tools', { body: { id: 'scheduled', steps: [step] } })).status).toBe(
      201,
    );
    await refused(
      'POST',
      '/v1/tools/scheduled/schedules',
      { cronExpression: '\x1b[2J* * * * *' },
      'cronExpression',
    );
    await refused(
      'POST',
      '/v1/tools/scheduled/schedules',
      { cronExpression: '*/5 * * * *', toolId: 'evil\x1b[2J' },
      'toolId',
    );
  });

  it.each(HOSTILE)('an API key name with %s', async (_what, text) => {
    await refused('POST', '/v1/api-keys', { name: text }, 'name');
  });
});
