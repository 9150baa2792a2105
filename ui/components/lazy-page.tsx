/**
 * A page whose code is fetched when it is first shown: each `import()` is a chunk of its own (ui/build.ts
 * bundles with splitting), so the first load carries the shell and the runs pages, not every page's
 * forms and editors. Once fetched, the page renders at once on every later visit.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiFailure, CLIENT_CODES } from '../api/client.ts';
import type { PageProps } from '../pages.tsx';
import { ErrorMessage } from './error-message.tsx';

type PageComponent = (props: PageProps) => JSX.Element | null;

export function lazyPage(load: () => Promise<PageComponent>): PageComponent {
  let loaded: PageComponent | undefined;
  let loading: Promise<PageComponent> | undefined;
  return function LazyPage(props: PageProps) {
    const [page, setPage] = useState<{ component: PageComponent } | undefined>(() =>
      loaded ? { component: loaded } : undefined,
    );
    const [error, setError] = useState<unknown>();
    useEffect(() => {
      if (page) return;
      let shown = true;
      loading ??= load().then((component) => {
        loaded = component;
        return component;
      });
      loading.then(
        (component) => shown && setPage({ component }),
        (caught: unknown) => {
          // The next visit tries again (a new build replaced the chunk, the network came back).
          loading = undefined;
          if (shown) setError(caught);
        },
      );
      return () => {
        shown = false;
      };
    }, []);
    if (error) {
      const failure = new ApiFailure({
        status: 0,
        message: `This page's code could not be fetched (${error instanceof Error ? error.message : String(error)})`,
        code: CLIENT_CODES.noAnswer,
        hint: 'Reload the page: kubeglue may have been upgraded, or the network was down.',
      });
      return <ErrorMessage error={failure} title="The page could not be shown" />;
    }
    if (!page) return <p role="status">Loading…</p>;
    const Page = page.component;
    return <Page {...props} />;
  };
}
