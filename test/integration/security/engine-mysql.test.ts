/**
 * MySQL steps through the real engine against the run's MariaDB: templates fill bound parameters only, a
 * system's credentials (username/password or a connection URL) go to its own server only and never into a
 * result or an error, and the egress guard judges the connection.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject, JsonValue } from '../../../contract/json.ts';
import type { ResolvedSystem } from '../../../contract/wire/run-order.ts';
import { mariadbSkip, useMariaDb } from '../../support/mariadb.ts';
import { DENY_PRIVATE, useTestEngine } from '../../support/security-engine.ts';

describe.skipIf(mariadbSkip())('MySQL steps in the engine', () => {
  const engine = useTestEngine();
  const database = useMariaDb();

  beforeAll(async () => {
    await database.admin.query(`
      CREATE TABLE accounts (id VARCHAR(10) PRIMARY KEY, owner VARCHAR(50) NOT NULL);
      INSERT INTO accounts VALUES ('a1', 'ada'), ('a2', 'linus');`);
  });

  const injection = "nobody' OR '1'='1";

  /** The system as a kubeglue System holds it: the URL without userinfo, the login in the credentials. */
  const shop = (extra: Partial<ResolvedSystem> = {}): ResolvedSystem => ({
    id: 'shop',
    url: database.bareUrl,
    authType: 'dataStore',
    credentials: { username: database.user, password: database.password },
    ...extra,
  });

  function lookup(body: JsonValue, inputs: JsonObject, system = shop()) {
    return engine.run(
      { steps: [{ id: 'lookup', config: { url: '/', systemId: 'shop', method: 'POST', body } }] },
      { inputs, systems: [system] },
    );
  }

  it('keeps an injection attempt through an input a bound value', async () => {
    const body = { query: 'SELECT id FROM accounts WHERE owner = ?', params: ['<<owner>>'] };
    const found = await lookup(body, { owner: 'ada' });
    expect(found.status).toBe('success');
    expect(found.data).toEqual([{ id: 'a1' }]);
    const injected = await lookup(body, { owner: injection });
    expect(injected.status).toBe('success');
    expect(injected.data).toEqual([]);
  });

  it('refuses <<…>> in the SQL text at run time, with the ? hint', async () => {
    const result = await lookup(
      { query: "SELECT id FROM accounts WHERE owner = '<<owner>>'" },
      { owner: injection },
    );
    expect(result.status).toBe('failed');
    expect(result.error).toContain(
      'config.body.query: template expressions are not allowed in SQL text (<<owner>>)',
    );
    expect(result.error).toContain('{"query": "SELECT … WHERE id = ?", "params": ["<<owner>>"]}');
  });

  it('takes the login from a connection URL in the credentials (<<shop_url>>)', async () => {
    const result = await engine.run(
      {
        steps: [
          {
            id: 'count',
            config: {
              url: '<<shop_url>>',
              systemId: 'shop',
              method: 'POST',
              body: 'SELECT COUNT(*) AS n FROM accounts',
            },
          },
        ],
      },
      { systems: [{ id: 'shop', authType: 'dataStore', credentials: { url: database.url } }] },
    );
    expect(result.status).toBe('success');
    expect(result.data).toEqual([{ n: 2 }]);
    expect(JSON.stringify(result)).not.toContain(database.password);
  });

  it('takes the login from the connection URL credential for a step on the system URL without one', async () => {
    const result = await lookup(
      'SELECT CURRENT_USER() AS who',
      {},
      shop({ credentials: { url: database.url } }),
    );
    expect(result.status, result.error).toBe('success');
    expect(result.data).toEqual([{ who: `${database.user}@%` }]);
    expect(JSON.stringify(result)).not.toContain(database.password);
  });

  it("sends the system's login only to its own server, and names neither the password in the error", async () => {
    // localhost is the same server, but not the system's origin (127.0.0.1): its login is withheld there.
    const elsewhere = database.bareUrl.replace('127.0.0.1', 'localhost');
    const result = await engine.run(
      {
        steps: [
          {
            id: 'other',
            config: { url: elsewhere, systemId: 'shop', method: 'POST', body: 'SELECT 1 AS one' },
          },
        ],
      },
      { systems: [shop()] },
    );
    expect(result.status).toBe('failed');
    expect(result.error).toContain('MySQL authentication to localhost');
    expect(result.error).toContain('using password: NO');
    expect(result.stepResults[0]?.notes?.join(' ')).toContain(
      "the credentials of system 'shop' were not sent",
    );
    expect(JSON.stringify(result)).not.toContain(database.password);

    const wrong = await lookup(
      'SELECT 1',
      {},
      shop({ credentials: { username: database.user, password: 'Wrong-pw-7731' } }),
    );
    expect(wrong.status).toBe('failed');
    // The user name is a credential value too: the engine's redaction names it, never shows it.
    expect(wrong.error).toContain("Access denied for user '<<shop_username>>'");
    expect(JSON.stringify(wrong)).not.toContain('Wrong-pw-7731');
  });

  it('is refused by the egress guard at connect time unless the system allows its network', async () => {
    const refused = await engine.run(
      {
        steps: [
          { id: 'lookup', config: { url: '/', systemId: 'shop', method: 'POST', body: 'SELECT 1 AS one' } },
        ],
      },
      { systems: [shop()], egress: DENY_PRIVATE },
    );
    expect(refused.status).toBe('failed');
    expect(refused.error).toContain('refused to connect to 127.0.0.1');
    const allowed = await engine.run(
      {
        steps: [
          { id: 'lookup', config: { url: '/', systemId: 'shop', method: 'POST', body: 'SELECT 1 AS one' } },
        ],
      },
      { systems: [shop({ allowedNetworks: ['127.0.0.1/32'] })], egress: DENY_PRIVATE },
    );
    expect(allowed.status).toBe('success');
    expect(allowed.data).toEqual([{ one: 1 }]);
  });
});
