import { describe, expect, it } from 'vitest';
import { ERROR_CATALOG, KG_ERR_RUN_LIMIT } from '../../../contract/api/errors.ts';
import { errorsPage, messageTemplate } from '../../../contract/api/errors-page.ts';

describe('docs/errors.md, generated from the error catalog', () => {
  it('shows each code once with its status, its message template and what to do', () => {
    const page = errorsPage();
    for (const entry of ERROR_CATALOG) {
      const rows = page.split('\n').filter((line) => line.startsWith(`| \`${entry.code}\` |`));
      expect(rows, entry.code).toHaveLength(1);
      expect(rows[0]).toContain(`| ${entry.statusCode}`);
      expect(entry.fix.trim(), entry.code).toMatch(/\S.*\.$/);
    }
    expect(page).toContain(
      "| `KG_ERR_TOOL_NOT_FOUND` | 404 | `Tool '<toolId>' not found` | Check the id: GET /v1/tools lists",
    );
    expect(page).toContain(
      `| \`KG_ERR_RUN_LIMIT\` | ${KG_ERR_RUN_LIMIT.statusCode}, with \`Retry-After: 1\` |`,
    );
  });

  it('names every argument a message fills in, lists included, and shows no artefact of the rendering', () => {
    for (const entry of ERROR_CATALOG) {
      const template = messageTemplate(entry);
      expect(template, entry.code).not.toMatch(/undefined|\[object|%3C|%3E/);
    }
    const inputs = ERROR_CATALOG.find((entry) => entry.code === 'KG_ERR_INPUTS_INVALID');
    expect(inputs && messageTemplate(inputs)).toBe(
      "Inputs do not match the inputSchema of tool '<toolId>': <violations>",
    );
    const reauthorize = ERROR_CATALOG.find((entry) => entry.code === 'KG_ERR_OAUTH_REAUTHORIZATION_REQUIRED');
    expect(reauthorize && messageTemplate(reauthorize)).toContain(
      'GET /v1/systems/<systemId>/oauth/authorize?environment=<environment>',
    );
  });
});
