import { describe, expect, it } from 'vitest';
import type { RequestStepConfig } from '../../../contract/api/tool.ts';
import type { JsonValue } from '../../../contract/json.ts';
import { sqlBodyTemplateProblems, sqlStepDialect } from '../../../engine/sql-templates.ts';

const step = (url: string): RequestStepConfig => ({ type: 'request', url, method: 'GET' });
const fields = (body: JsonValue | undefined) => sqlBodyTemplateProblems(body).map((p) => p.field);

describe('SQL steps and SQL templates', () => {
  it('are told by their own scheme, else by their system', () => {
    expect(sqlStepDialect(step('postgres://db/app'), [])).toBe('postgres');
    expect(sqlStepDialect(step('PostgreSQL://db/app'), [])).toBe('postgres');
    expect(sqlStepDialect(step('https://db/app'), ['postgres://x'])).toBeUndefined();
    expect(sqlStepDialect(step('/'), ['postgresql://db/warehouse'])).toBe('postgres');
    expect(sqlStepDialect(step('/items'), ['https://api.example', 'postgres://db/x'])).toBe('postgres');
    expect(sqlStepDialect(step('/items'), ['https://api.example'])).toBeUndefined();
    // Only known when rendered: the engine refuses it at run time.
    expect(sqlStepDialect(step('<<dbUrl>>'), [])).toBeUndefined();
  });

  it('tell MySQL and MariaDB steps the same way', () => {
    expect(sqlStepDialect(step('mysql://db/shop'), [])).toBe('mysql');
    expect(sqlStepDialect(step('MariaDB://db/shop'), [])).toBe('mysql');
    expect(sqlStepDialect(step('/'), ['https://api.example', 'mariadb://db/shop'])).toBe('mysql');
  });

  it("show the placeholders of the step's SQL in the hint", () => {
    const [mysql] = sqlBodyTemplateProblems({ query: 'SELECT * FROM t WHERE id = <<id>>' }, 'mysql');
    expect(mysql?.message).toContain('write ? in the query');
    expect(mysql?.message).toContain('{"query": "SELECT … WHERE id = ?", "params": ["<<id>>"]}');
    const [text] = sqlBodyTemplateProblems('SELECT <<id>>', 'mysql');
    expect(text?.message).toContain('a MySQL body given as text');
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
