import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { PageProps } from '../pages.tsx';
import { ErrorMessage } from './error-message.tsx';

type Page = (props: PageProps) => JSX.Element | null;

/**
 * A page whose code is a chunk of its own, fetched the first time the page is shown: esbuild splits the
 * bundle at `import()`, so what only this page needs (its charts) stays out of every other page's first load.
 */
export function lazyPage(load: () => Promise<Page>): Page {
  let loaded: Page | undefined;
  return function LazyPage(props: PageProps) {
    const [page, setPage] = useState<Page | undefined>(() => loaded);
    const [error, setError] = useState<unknown>();
    useEffect(() => {
      if (loaded) return;
      load().then(
        (component) => {
          loaded = component;
          setPage(() => component);
        },
        (caught) => setError(caught),
      );
    }, []);
    if (error)
      return <ErrorMessage error={error} title="This page could not be loaded; reload to try again" />;
    if (!page) return <p role="status">Loading…</p>;
    const Loaded = page;
    return <Loaded {...props} />;
  };
}
