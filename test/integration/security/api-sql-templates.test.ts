/**
 * Issue 7, item 3 (save-time half): a template inside the SQL text of a Postgres step would paste
 * request data into SQL (injection). Such tools are refused when saved; values belong in `params`.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import { useTestApi } from '../../support/embedded.ts';

const api = useTestApi();

beforeAll(async () => {
  const system = await api.call('POST', '/v1/systems', {
    body: { id: 'warehouse', url: 'postgresql://db.internal:5432/warehouse', authType: 'dataStore' },
  });
  expect(system.status).toBe(201);
  const web = await api.call('POST', '/v1/systems', { body: { id: 'web', url: 'https://api.example' } });
  expect(web.status).toBe(201);
});

const postgresTool = (id: string, config: Record<string, unknown>) => ({
  id,
  steps: [{ id: 'lookup', config }],
});

function expectSqlTemplateRefusal(answer: { status: number; body: ErrorBody }, expression: string) {
  expect(answer.status).toBe(422);
  expect(answer.body.error.code).toBe('KG_ERR_TOOL_INVALID');
  const message = answer.body.error.message;
  expect(message).toContain('steps[0] (lookup)');
  expect(message).toContain(expression);
  expect(message).toContain('$1');
  expect(message).toContain('params');
}

describe('templates in the SQL text of Postgres steps', () => {
  it('are refused in body.query of a step whose URL is postgres://', async () => {
    const answer = await api.call<ErrorBody>('POST', '/v1/tools', {
      body: postgresTool('by-url', {
        url: 'postgres://db.internal/app',
        body: { query: "SELECT * FROM users WHERE name = '<<name>>'" },
      }),
    });
    expectSqlTemplateRefusal(answer, '<<name>>');
    expect((await api.call('GET', '/v1/tools/by-url')).status).toBe(404);
  });

  it('are refused for a step of a system whose URL is postgresql://, and in plain SQL bodies', async () => {
    const viaSystem = await api.call<ErrorBody>('POST', '/v1/tools', {
      body: postgresTool('by-system', {
        url: '/',
        systemId: 'warehouse',
        body: { query: 'SELECT * FROM orders WHERE id = <<(s) => s.orderId>>', params: [] },
      }),
    });
    expectSqlTemplateRefusal(viaSystem, '<<(s) => s.orderId>>');
    /** A tool whose step sends `body` as text to a postgresql:// URL is refused, naming the expression. */
    const textBodyRefused = async (id: string, body: string, expression: string) =>
      expectSqlTemplateRefusal(
        await api.call<ErrorBody>('POST', '/v1/tools', {
          body: postgresTool(id, { url: 'postgresql://db.internal/app', body }),
        }),
        expression,
      );
    await textBodyRefused('plain', 'DELETE FROM sessions WHERE user_id = <<userId>>', '<<userId>>');
    await textBodyRefused('json-text', '{"query": "SELECT <<col>> FROM t", "params": []}', '<<col>>');
    // JSON text is rendered by text substitution: a value in params could close its string and add a
    // "query" of its own, so a text body holds no expression at all; the object form is the safe one.
    await textBodyRefused('json-text-params', '{"query": "SELECT $1::int", "params": ["<<n>>"]}', '<<n>>');
    await textBodyRefused('whole', '<<sql>>', '<<sql>>');
  });

  it('are refused on update too', async () => {
    const created = await api.call('POST', '/v1/tools', {
      body: postgresTool('safe', {
        url: 'postgres://db.internal/app',
        body: { query: 'SELECT * FROM users WHERE name = $1', params: ['<<name>>'] },
      }),
    });
    expect(created.status).toBe(201);
    const updated = await api.call<ErrorBody>('PUT', '/v1/tools/safe', {
      body: {
        steps: [
          {
            id: 'lookup',
            config: { url: 'postgres://db.internal/app', body: { query: 'SELECT <<name>>' } },
          },
        ],
      },
    });
    expectSqlTemplateRefusal(updated, '<<name>>');
  });

  it('stay allowed in the params of an object body, and in HTTP bodies', async () => {
    const params = await api.call('POST', '/v1/tools', {
      body: postgresTool('params-ok', {
        url: '/',
        systemId: 'warehouse',
        body: {
          query: 'SELECT * FROM orders WHERE id = $1 AND owner = $2',
          params: ['<<id>>', '<<(s) => s.o>>'],
        },
      }),
    });
    expect(params.status).toBe(201);
    const plainText = await api.call('POST', '/v1/tools', {
      body: postgresTool('text-ok', {
        url: 'postgresql://db.internal/app',
        body: 'SELECT count(*) FROM orders',
      }),
    });
    expect(plainText.status).toBe(201);
    const http = await api.call('POST', '/v1/tools', {
      body: postgresTool('http-ok', {
        url: '/search',
        systemId: 'web',
        method: 'POST',
        body: { query: 'name = <<name>>' },
      }),
    });
    expect(http.status).toBe(201);
  });
});

describe('templates in the SQL text of MySQL and MariaDB steps', () => {
  it('are refused at save, by the step URL or the system URL, with the ? hint; params stay allowed', async () => {
    const shop = await api.call('POST', '/v1/systems', {
      body: { id: 'shop', url: 'mariadb://db.internal:3306/shop', authType: 'dataStore' },
    });
    expect(shop.status).toBe(201);
    for (const [id, config] of [
      [
        'mysql-url',
        { url: 'mysql://db.internal/shop', body: { query: "SELECT * FROM t WHERE a = '<<a>>'" } },
      ],
      ['mariadb-system', { url: '/', systemId: 'shop', body: { query: 'SELECT * FROM t WHERE a = <<a>>' } }],
      ['mysql-text', { url: 'mysql://db.internal/shop', body: 'DELETE FROM t WHERE a = <<a>>' }],
    ] as const) {
      const answer = await api.call<ErrorBody>('POST', '/v1/tools', { body: postgresTool(id, config) });
      expect(answer.status).toBe(422);
      expect(answer.body.error.code).toBe('KG_ERR_TOOL_INVALID');
      expect(answer.body.error.message).toContain('steps[0] (lookup)');
      expect(answer.body.error.message).toContain('<<a>>');
      expect(answer.body.error.message).toContain('write ? in the query');
    }
    const params = await api.call('POST', '/v1/tools', {
      body: postgresTool('mysql-params-ok', {
        url: '/',
        systemId: 'shop',
        body: { query: 'SELECT * FROM t WHERE a = ?', params: ['<<a>>'] },
      }),
    });
    expect(params.status).toBe(201);
  });
});
