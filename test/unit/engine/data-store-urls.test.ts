import { describe, expect, it } from 'vitest';
import { resolveMysqlConnection } from '../../../engine/protocols/mysql-target.ts';
import { resolvePostgresConnection } from '../../../engine/protocols/postgres.ts';
import { resolveRedisTarget } from '../../../engine/protocols/redis-target.ts';

const STORES = [
  {
    name: 'MySQL',
    resolve: resolveMysqlConnection,
    schemes: ['mysql', 'mariadb'],
    host: (r: unknown) => (r as { host: string }).host,
  },
  {
    name: 'Postgres',
    resolve: resolvePostgresConnection,
    schemes: ['postgres', 'postgresql'],
    host: (r: unknown) => (r as { config: { host: string } }).config.host,
  },
  {
    name: 'Redis',
    resolve: resolveRedisTarget,
    schemes: ['redis', 'rediss'],
    host: (r: unknown) => (r as { host: string }).host,
  },
];

describe.each(STORES)('a $name step URL', (store) => {
  it('that does not parse is refused without repeating it, so its password stays out of the error', () => {
    const url = `${store.schemes[0]}://ada:s3cret-pw@db.example:99999/0`;
    expect(() => store.resolve(url, {})).toThrow(new RegExp(`^Invalid ${store.name} URL$`));
    expect(() => store.resolve(url, {})).not.toThrow(/s3cret-pw/);
  });

  it('of another protocol is refused, naming the scheme', () => {
    expect(() => store.resolve('http://db.example/0', {})).toThrow(`Not a ${store.name} URL (scheme http:)`);
  });

  it('takes both its schemes and an IPv6 host without its brackets', () => {
    for (const scheme of store.schemes) {
      expect(store.host(store.resolve(`${scheme}://ada:pw@[::1]:1234/0`, {}))).toBe('::1');
    }
  });
});
