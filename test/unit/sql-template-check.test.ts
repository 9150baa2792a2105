import { describe, expect, it } from 'vitest';
import type { RequestStepConfig } from '../../contract/api/tool.ts';
import type { JsonValue } from '../../contract/json.ts';
import { isPostgresStep, sqlBodyTemplateProblems } from '../../engine/sql-templates.ts';

const step = (url: string): RequestStepConfig => ({ type: 'request', url, method: 'GET' });
const fields = (body: JsonValue | undefined) => sqlBodyTemplateProblems(body).map((p) => p.field);

describe('Postgres steps and SQL templates', () => {
  it('are told by their own scheme, else by their system', () => {
    expect(isPostgresStep(step('postgres://db/app'), [])).toBe(true);
    expect(isPostgresStep(step('PostgreSQL://db/app'), [])).toBe(true);
    expect(isPostgresStep(step('https://db/app'), ['postgres://x'])).toBe(false);
    expect(isPostgresStep(step('/'), ['postgresql://db/warehouse'])).toBe(true);
    expect(isPostgresStep(step('/items'), ['https://api.example', 'postgres://db/x'])).toBe(true);
    expect(isPostgresStep(step('/items'), ['https://api.example'])).toBe(false);
    // Only known when rendered: the engine refuses it at run time.
    expect(isPostgresStep(step('<<dbUrl>>'), [])).toBe(false);
  });

  it('refuse expressions in the SQL text and in text bodies, and allow them in the params of object bodies', () => {
    expect(fields({ query: 'SELECT <<a>>', params: ['<<b>>'] })).toEqual(['config.body.query']);
    expect(fields({ query: 'SELECT $1', params: ['<<b>>'], values: [] })).toEqual([]);
    expect(fields('SELECT * FROM t WHERE id = <<id>>')).toEqual(['config.body']);
    expect(fields('<<(s) => s.sql>>')).toEqual(['config.body']);
    expect(fields('{"query": "SELECT <<a>>"}')).toEqual(['config.body']);
    // Text substitution into JSON text: a value `x"], "query": "DROP TABLE t", "y": ["` replaces the query.
    expect(fields('{"query": "SELECT $1", "params": ["<<a>>"]}')).toEqual(['config.body']);
    expect(fields('SELECT 1')).toEqual([]);
    expect(fields('{"query": "SELECT $1", "params": [1]}')).toEqual([]);
    expect(fields(undefined)).toEqual([]);
    expect(fields({ sql: 'SELECT <<a>>' })).toEqual([]);
  });

  it('name every expression and show the parameterised form', () => {
    const [problem] = sqlBodyTemplateProblems({ query: "SELECT '<<a>>', <<(s) => s.b>>" });
    expect(problem?.message).toContain('<<a>>, <<(s) => s.b>>');
    expect(problem?.message).toContain('"params": ["<<a>>"]');
  });
});
