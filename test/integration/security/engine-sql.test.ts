import { beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject, JsonValue } from '../../../contract/json.ts';
import { useTestDatabase } from '../../support/database.ts';
import { useTestEngine } from '../../support/security-engine.ts';

const engine = useTestEngine();
const database = useTestDatabase();

beforeAll(async () => {
  await database.client.query('CREATE TABLE accounts (id text PRIMARY KEY, owner text NOT NULL)');
  await database.client.query("INSERT INTO accounts VALUES ('a1', 'ada'), ('a2', 'linus')");
});

const injection = "nobody' OR '1'='1";

/** Runs one step `id` that sends `body` to the test database, with the inputs. */
function postgresStep(id: string, body: JsonValue, inputs: JsonObject) {
  return engine.run({ steps: [{ id, config: { url: database.url, method: 'POST', body } }] }, { inputs });
}

describe('SQL templates at run time', () => {
  it('refuses <<…>> in the query text, naming the step and the expression, with the $1 hint', async () => {
    const result = await postgresStep(
      'lookup',
      { query: "SELECT id FROM accounts WHERE owner = '<<owner>>'" },
      { owner: injection },
    );
    expect(result.status).toBe('failed');
    expect(result.data).toBeNull();
    expect(result.error).toBe(
      'Step lookup failed: config.body.query: template expressions are not allowed in SQL text (<<owner>>): ' +
        'the value would become part of the SQL (SQL injection); write $1, $2, … in the query and give the ' +
        'values in "params" of an object body, e.g. {"query": "SELECT … WHERE id = $1", "params": ["<<owner>>"]}',
    );
  });

  it('refuses templates anywhere in a body given as text: plain SQL or JSON text', async () => {
    const plain = await postgresStep('plain', 'SELECT * FROM accounts WHERE id = <<(s) => s.id>>', {
      id: "'a1'",
    });
    expect(plain.error).toContain(
      'Step plain failed: config.body: template expressions are not allowed in a Postgres body given as text (<<(s) => s.id>>)',
    );

    const jsonText = await postgresStep(
      'text',
      '{"query": "SELECT * FROM <<table>> WHERE id = $1", "params": ["<<id>>"]}',
      { id: 'a1', table: 'accounts' },
    );
    // Text substitution into JSON text could close a params string and add its own "query".
    expect(jsonText.error).toContain(
      'config.body: template expressions are not allowed in a Postgres body given as text (<<table>>, <<id>>)',
    );
  });

  it('keeps templates in params of an object body working, and the value stays a value', async () => {
    const result = await postgresStep(
      'lookup',
      { query: 'SELECT id FROM accounts WHERE owner = $1', params: ['<<owner>>'] },
      { owner: 'ada' },
    );
    expect(result.status).toBe('success');
    expect(result.data).toEqual([{ id: 'a1' }]);

    const injected = await postgresStep(
      'lookup',
      { query: 'SELECT id FROM accounts WHERE owner = $1', params: ['<<owner>>'] },
      { owner: injection },
    );
    expect(injected.status).toBe('success');
    expect(injected.data).toEqual([]);
  });

  it('lets a dataStore system keep its connection URL in the url credential, used as <<db_url>>', async () => {
    const result = await engine.run(
      {
        steps: [
          {
            id: 'lookup',
            config: {
              url: '<<db_url>>',
              systemId: 'db',
              method: 'POST',
              body: { query: 'SELECT count(*)::int AS n FROM accounts' },
            },
          },
        ],
      },
      { systems: [{ id: 'db', authType: 'dataStore', credentials: { url: database.url } }] },
    );
    expect(result.status).toBe('success');
    expect(result.data).toEqual([{ n: 2 }]);
  });
});
