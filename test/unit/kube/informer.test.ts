import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { registerInformerMetrics } from '../../../kube/controller-metrics.ts';
import { Informer } from '../../../kube/informer.ts';
import {
  type BookmarkEvent,
  type ListResult,
  type ResourceClient,
  ResourceError,
  type WatchEvent,
  type WatchOptions,
  type WireObject,
} from '../../../kube/resources/index.ts';

type Obj = WireObject & { data?: string };

function obj(name: string, resourceVersion: string, data?: string, uid = `uid-${name}`): Obj {
  return {
    apiVersion: 'test/v1',
    kind: 'Thing',
    metadata: { name, resourceVersion, uid },
    ...(data ? { data } : {}),
  };
}

type AnyEvent = WatchEvent<Obj> | BookmarkEvent;

/** One open watch: the test pushes its events and ends or fails it. */
class Stream {
  readonly options: WatchOptions;
  readonly #queue: (AnyEvent | Error | 'end')[] = [];
  #wake: (() => void) | undefined;

  constructor(options: WatchOptions) {
    this.options = options;
    options.signal.addEventListener('abort', () => this.#push('end'));
  }

  send(event: AnyEvent): void {
    this.#push(event);
  }
  end(): void {
    this.#push('end');
  }
  fail(error: Error): void {
    this.#push(error);
  }

  #push(item: AnyEvent | Error | 'end'): void {
    this.#queue.push(item);
    this.#wake?.();
  }

  async *events(): AsyncGenerator<AnyEvent> {
    for (;;) {
      const item = this.#queue.shift();
      if (item === undefined) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
        continue;
      }
      if (item === 'end') return;
      if (item instanceof Error) throw item;
      yield item;
    }
  }
}

/** A ResourceClient whose list answers are set by the test and whose watches it drives. */
class FakeClient {
  listed: ListResult<Obj> = { items: [], resourceVersion: 'list-1' };
  listCalls = 0;
  readonly streams: Stream[] = [];
  #waiters: (() => void)[] = [];

  async list(): Promise<ListResult<Obj>> {
    this.listCalls++;
    return structuredClone(this.listed);
  }

  watch(options: WatchOptions): AsyncIterable<AnyEvent> {
    const stream = new Stream(options);
    this.streams.push(stream);
    for (const wake of this.#waiters.splice(0)) wake();
    return stream.events();
  }

  /** The nth watch (0-based), once the informer has opened it. */
  async stream(n: number): Promise<Stream> {
    while (this.streams.length <= n) {
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
    return this.streams[n] as Stream;
  }

  asClient(): ResourceClient<Obj> {
    return this as unknown as ResourceClient<Obj>;
  }
}

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const informers: Informer<Obj>[] = [];
function informer(fake: FakeClient, options: ConstructorParameters<typeof Informer>[1] = {}) {
  const created = new Informer<Obj>(fake.asClient(), { minBackoffMs: 1, maxBackoffMs: 20, ...options });
  informers.push(created);
  return created;
}

afterEach(async () => {
  await Promise.all(informers.splice(0).map((i) => i.stop()));
});

describe('Informer', () => {
  it('lists, then watches from the list’s version; start() resolves once synced', async () => {
    const fake = new FakeClient();
    fake.listed = { items: [obj('a', '10')], resourceVersion: 'list-7' };
    const cache = informer(fake);
    expect(cache.hasSynced).toBe(false);
    await cache.start();
    expect(cache.hasSynced).toBe(true);
    expect(cache.get('a')?.metadata.resourceVersion).toBe('10');
    const stream = await fake.stream(0);
    expect(stream.options).toMatchObject({ resourceVersion: 'list-7', bookmarks: true });
    expect(stream.options.timeoutSeconds).toBeGreaterThanOrEqual(300);
    stream.send({ type: 'ADDED', object: obj('b', '11') });
    await until(() => cache.get('b') !== undefined);
    expect(cache.keys().sort()).toEqual(['a', 'b']);
  });

  it('resumes from the last event or bookmark when a watch ends or fails, without listing again', async () => {
    const fake = new FakeClient();
    const cache = informer(fake);
    await cache.start();
    const first = await fake.stream(0);
    first.send({ type: 'ADDED', object: obj('a', 'v-a') });
    first.end();
    const second = await fake.stream(1);
    expect(second.options.resourceVersion).toBe('v-a');
    second.send({ type: 'BOOKMARK', object: { metadata: { resourceVersion: 'bm-1' } } });
    second.fail(new Error('connection reset'));
    const third = await fake.stream(2);
    expect(third.options.resourceVersion).toBe('bm-1');
    expect(fake.listCalls).toBe(1);
    expect(cache.get('a')).toBeDefined();
  });

  it('lists again on 410 Gone and makes the cache equal to the new list', async () => {
    const fake = new FakeClient();
    fake.listed = {
      items: [obj('keep', '1'), obj('change', '2'), obj('vanish', '3')],
      resourceVersion: 'l1',
    };
    const cache = informer(fake);
    const events: string[] = [];
    cache.onEvent((type, object) => events.push(`${type} ${object.metadata.name}`));
    await cache.start();
    events.length = 0;
    fake.listed = { items: [obj('keep', '1'), obj('change', '5'), obj('new', '6')], resourceVersion: 'l2' };
    (await fake.stream(0)).fail(new ResourceError('Gone', 'too old resource version: 1 (5)'));
    const next = await fake.stream(1);
    expect(next.options.resourceVersion).toBe('l2');
    expect(fake.listCalls).toBe(2);
    expect(events.sort()).toEqual(['ADDED new', 'DELETED vanish', 'MODIFIED change']);
    expect(cache.keys().sort()).toEqual(['change', 'keep', 'new']);
  });

  it('keeps retrying with backoff while the server fails, and recovers', async () => {
    const fake = new FakeClient();
    const cache = informer(fake);
    await cache.start();
    for (let i = 0; i < 5; i++) (await fake.stream(i)).fail(new ResourceError('InternalError', 'boom'));
    const healthy = await fake.stream(5);
    healthy.send({ type: 'ADDED', object: obj('late', '9') });
    await until(() => cache.get('late') !== undefined);
    expect(fake.listCalls).toBe(1);
  });

  it('is live from its list and while a watch runs; not from a failed watch until the next one starts', async () => {
    const fake = new FakeClient();
    const cache = informer(fake, { minBackoffMs: 200, maxBackoffMs: 200 });
    expect(cache.live).toBe(false);
    await cache.start();
    expect(cache.live).toBe(true);
    (await fake.stream(0)).fail(new ResourceError('InternalError', 'boom'));
    await until(() => !cache.live);
    // Backing off: no watch is running, so the cache may miss changes.
    expect(fake.streams).toHaveLength(1);
    await fake.stream(1);
    expect(cache.live).toBe(true);
    await cache.stop();
    expect(cache.live).toBe(false);
  });

  it('never compares resourceVersions: applies events in the order the watch delivers them', async () => {
    const fake = new FakeClient();
    fake.listed = { items: [obj('a', 'zz')], resourceVersion: 'zz' };
    const cache = informer(fake);
    await cache.start();
    const stream = await fake.stream(0);
    // Opaque versions: a later one may sort before an earlier one.
    stream.send({ type: 'MODIFIED', object: obj('a', 'aa', 'second') });
    stream.send({ type: 'MODIFIED', object: obj('a', '10', 'third') });
    stream.send({ type: 'MODIFIED', object: obj('a', '9', 'fourth') });
    await until(() => cache.get('a')?.data === 'fourth');
  });

  it('emits change for every key, and again for each at every resync, without listing', async () => {
    const fake = new FakeClient();
    fake.listed = { items: [obj('a', '1'), obj('b', '2')], resourceVersion: 'l' };
    const cache = informer(fake, { resyncMs: 50 });
    const changed: string[] = [];
    cache.on('change', (key) => changed.push(key));
    await cache.start();
    expect(changed.sort()).toEqual(['a', 'b']);
    await until(() => changed.length >= 6);
    expect(fake.listCalls).toBe(1);
    expect(new Set(changed)).toEqual(new Set(['a', 'b']));
  });

  describe('read-your-writes', () => {
    it('an own write is not undone by an older event still in flight', async () => {
      const fake = new FakeClient();
      fake.listed = { items: [obj('a', 'v1', 'old')], resourceVersion: 'v1' };
      const cache = informer(fake);
      const changes: string[] = [];
      cache.on('change', (key) => changes.push(key));
      await cache.start();
      changes.length = 0;
      cache.observe('MODIFIED', obj('a', 'v3', 'mine'));
      expect(cache.get('a')?.data).toBe('mine');
      const stream = await fake.stream(0);
      stream.send({ type: 'MODIFIED', object: obj('a', 'v2', 'in flight') });
      stream.send({ type: 'MODIFIED', object: obj('b', 'v2b', 'other key') });
      await until(() => cache.get('b') !== undefined);
      expect(cache.get('a')?.data).toBe('mine');
      // Our own version comes back: nothing changes, nothing is emitted again.
      stream.send({ type: 'MODIFIED', object: obj('a', 'v3', 'mine') });
      stream.send({ type: 'MODIFIED', object: obj('a', 'v4', 'theirs') });
      await until(() => cache.get('a')?.data === 'theirs');
      expect(changes).toEqual(['a', 'b', 'a']);
    });

    it('a write the watch already delivered (and moved past) does not roll the cache back', async () => {
      const fake = new FakeClient();
      const cache = informer(fake);
      await cache.start();
      const stream = await fake.stream(0);
      stream.send({ type: 'ADDED', object: obj('a', 'v1', 'first') });
      stream.send({ type: 'MODIFIED', object: obj('a', 'v2', 'second') });
      await until(() => cache.get('a')?.data === 'second');
      // E.g. a no-op update that answered with v1, observed late.
      cache.observe('MODIFIED', obj('a', 'v1', 'first'));
      expect(cache.get('a')?.data).toBe('second');
      stream.send({ type: 'MODIFIED', object: obj('a', 'v3', 'third') });
      await until(() => cache.get('a')?.data === 'third');
    });

    it('an own delete is not undone by an older event; a new incarnation survives an old deletion', async () => {
      const fake = new FakeClient();
      fake.listed = { items: [obj('a', 'v1', 'old', 'uid-1')], resourceVersion: 'v1' };
      const cache = informer(fake);
      await cache.start();
      const stream = await fake.stream(0);
      cache.observe('DELETED', obj('a', 'v1', 'old', 'uid-1'));
      expect(cache.get('a')).toBeUndefined();
      stream.send({ type: 'MODIFIED', object: obj('a', 'v2', 'in flight', 'uid-1') });
      stream.send({ type: 'ADDED', object: obj('marker', 'm') });
      await until(() => cache.get('marker') !== undefined);
      expect(cache.get('a')).toBeUndefined();
      // Recreated by us before the old deletion came through.
      cache.observe('ADDED', obj('a', 'v5', 'new', 'uid-2'));
      stream.send({ type: 'DELETED', object: obj('a', 'v3', 'old', 'uid-1') });
      stream.send({ type: 'ADDED', object: obj('marker2', 'm2') });
      await until(() => cache.get('marker2') !== undefined);
      expect(cache.get('a')?.data).toBe('new');
    });

    it('lists again when an own write never comes back through the watch', async () => {
      const fake = new FakeClient();
      fake.listed = { items: [obj('a', 'v1', 'listed')], resourceVersion: 'l1' };
      const cache = informer(fake, { observeTimeoutMs: 50 });
      await cache.start();
      cache.observe('MODIFIED', obj('a', 'never-delivered', 'mine'));
      fake.listed = { items: [obj('a', 'v9', 'truth')], resourceVersion: 'l2' };
      await until(() => fake.listCalls === 2);
      await until(() => cache.get('a')?.data === 'truth');
    });
  });

  it('records when the server last spoke, for the last-event-age gauge', async () => {
    const fake = new FakeClient();
    const cache = informer(fake, { kind: 'Thing' });
    const registry = new Registry();
    let now = Date.now();
    registerInformerMetrics(registry, [cache], () => now);
    expect(await registry.metrics()).not.toMatch(/kind="Thing"/);
    await cache.start();
    const listedAt = cache.lastEventAt ?? 0;
    expect(listedAt).toBeGreaterThan(0);
    now = listedAt + 42_000;
    expect(await registry.metrics()).toMatch(/kubeglue_informer_last_event_age_seconds\{kind="Thing"\} 42/);
    const stream = await fake.stream(0);
    await new Promise((resolve) => setTimeout(resolve, 5));
    stream.send({ type: 'BOOKMARK', object: { metadata: { resourceVersion: 'b' } } });
    await until(() => (cache.lastEventAt ?? 0) > listedAt);
  });

  it('survives a listener that throws', async () => {
    const fake = new FakeClient();
    const lines: string[] = [];
    const cache = informer(fake, { log: (line) => lines.push(line) });
    cache.on('change', () => {
      throw new Error('listener bug');
    });
    await cache.start();
    const stream = await fake.stream(0);
    stream.send({ type: 'ADDED', object: obj('a', '1') });
    stream.send({ type: 'ADDED', object: obj('b', '2') });
    await until(() => cache.get('b') !== undefined);
    expect(lines.some((line) => line.includes('listener bug'))).toBe(true);
  });
});
