/**
 * The systems the recording and replay tests run tools against: an HTTP "crm" with a paginated list of
 * items and a page per item, each echoing the credentials it was sent (as an API that returns its request
 * does), and a Postgres "warehouse" and a Redis "cache" behind passwords.
 */
import type { HttpTarget } from './http-target.ts';
import type { TestRole } from './postgres.ts';

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

/** The warehouse (Postgres at `pgUrl`, as `role` with `password`) and the cache (Redis) systems. */
export function storeSystems(options: {
  pgUrl: string;
  role: TestRole;
  password: string;
  redisUrl: string;
  redisPassword: string;
}) {
  return [
    {
      id: 'warehouse',
      url: options.pgUrl,
      authType: 'dataStore',
      credentials: { username: options.role.name, password: options.password },
    },
    {
      id: 'cache',
      url: options.redisUrl,
      authType: 'dataStore',
      credentials: { password: options.redisPassword },
    },
  ];
}
