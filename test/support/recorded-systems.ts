/**
 * The systems the recording and replay tests run tools against: an HTTP "crm" with a paginated list of
 * items and a page per item, each echoing the credentials it was sent (as an API that returns its request
 * does), and a Postgres "warehouse" and a Redis "cache" behind passwords.
 */
import { afterAll, expect, inject } from 'vitest';
import { callOk, startTestApi, type TestApi } from './embedded.ts';
import { useStarted } from './fixture.ts';
import type { HttpTarget } from './http-target.ts';
import {
  createPasswordRole,
  createTestDatabase,
  type TestDatabase,
  type TestRole,
  urlWithoutLogin,
} from './postgres.ts';
import { REDIS_PASSWORD, useRedisServer } from './redis-server.ts';

/**
 * For a file whose tests must reach no system once its runs are recorded: routes note() each request;
 * between seal() and unseal() every one noted is late (`late`), and the file fails on any (afterAll).
 */
export function useSealedAfterRecording(): {
  note(url: string): void;
  seal(): void;
  unseal(): void;
  readonly late: readonly string[];
} {
  let sealed = false;
  const late: string[] = [];
  afterAll(() => {
    expect(late, 'requests that reached the target after the recording').toEqual([]);
  });
  return {
    note: (url) => {
      if (sealed) late.push(url);
    },
    seal: () => {
      sealed = true;
    },
    unseal: () => {
      sealed = false;
    },
    late,
  };
}

/** Every item of the crm's list, 5 in pages of 2: three pages, the last one short. */
export const ITEMS = [1, 2, 3, 4, 5].map((id) => ({ id, name: `item ${id}` }));

/** A paginated step (three pages) and a loop over three of its items, on the system crm. */
export function crmSteps() {
  return [
    {
      id: 'list',
      config: {
        systemId: 'crm',
        url: '/items',
        queryParams: { page: '<<page>>', pageSize: '<<pageSize>>' },
        pagination: { type: 'pageBased', pageSize: 2 },
      },
    },
    {
      id: 'detail',
      dataSelector: '(sourceData) => sourceData.list.data.slice(0, 3).map((item) => item.id)',
      config: { systemId: 'crm', url: '/items/<<currentItem>>', queryParams: { key: '<<crm_apiKey>>' } },
    },
  ];
}

/**
 * Routes the crm on `target`: GET /items?page=N (header x-page, each item with the Authorization it was
 * sent) and GET /items/1 to 3 (with the `key` query parameter it was sent). `seen` hears each request URL.
 */
export function routeCrm(target: HttpTarget, seen: (url: string) => void = () => {}): void {
  target.route('GET', '/items', (req) => {
    seen(req.url);
    const page = Number(new URL(req.url, 'http://x').searchParams.get('page'));
    return {
      headers: { 'x-page': String(page) },
      body: ITEMS.slice((page - 1) * 2, page * 2).map((item) => ({
        ...item,
        sentAuth: req.headers.authorization ?? null,
      })),
    };
  });
  for (const id of [1, 2, 3]) {
    target.route('GET', `/items/${id}`, (req) => {
      seen(req.url);
      return {
        body: { id, detail: true, sentKey: req.query.find(([name]) => name === 'key')?.[1] ?? null },
      };
    });
  }
}

/** The crm system at `url`, with a bearer token and an API key (the steps use `<<crm_apiKey>>`). */
export function crmSystem(url: string, credentials: { bearerToken: string; apiKey: string }) {
  return { id: 'crm', url, authType: 'bearer', credentials };
}

/** A started API with the warehouse (Postgres) and cache (Redis) systems saved. */
export interface StoreSystems {
  api: TestApi;
  /** The role the warehouse logs in as; dropping it makes any connection to the database fail. */
  role: TestRole;
  /** The database's URL without a login: the system's and a step's. */
  pgUrl: string;
  redisUrl: string;
}

/**
 * For the tests of the enclosing block: a real Redis server, a fresh Postgres database with a role
 * logging in with `password`, and a started API where the systems warehouse (that database, as that
 * role) and cache (that Redis, with its password) are saved. All stopped and dropped after the block.
 */
export function useStoreSystems(password: string): StoreSystems {
  const redis = useRedisServer();
  let database: TestDatabase | undefined;
  return useStarted(
    async () => {
      database = await createTestDatabase(inject('databaseUrl'));
      const role = await createPasswordRole(database, password);
      const pgUrl = urlWithoutLogin(database);
      const api = await startTestApi();
      for (const system of [
        {
          id: 'warehouse',
          url: pgUrl,
          authType: 'dataStore',
          credentials: { username: role.name, password },
        },
        { id: 'cache', url: redis.url, authType: 'dataStore', credentials: { password: REDIS_PASSWORD } },
      ]) {
        await callOk(api, 'POST', '/v1/systems', system);
      }
      return { api, role, pgUrl, redisUrl: redis.url };
    },
    async ({ api, role }) => {
      await api.stop();
      await database?.drop();
      await role.drop();
    },
  );
}
