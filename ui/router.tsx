/**
 * Routing by the History API: each page has a real path (/runs, /runs/<id>), which the server answers
 * with index.html (api/dashboard.ts), so links can be shared and opened in new tabs. Query parameters
 * carry a page's state (the runs list's filters), so the back button and a copied link restore it.
 */
import { signal } from '@preact/signals';
import type { ComponentChildren, JSX, TargetedMouseEvent } from 'preact';

export interface Location {
  path: string;
  query: URLSearchParams;
}

function current(): Location {
  return { path: window.location.pathname, query: new URLSearchParams(window.location.search) };
}

export const location = signal<Location>(current());

window.addEventListener('popstate', () => {
  location.value = current();
});

/** Goes to href (a path with an optional query) without reloading; `replace` keeps history short. */
export function navigate(href: string, options: { replace?: boolean } = {}): void {
  if (options.replace) window.history.replaceState(null, '', href);
  else window.history.pushState(null, '', href);
  location.value = current();
}

/** A path with the given query (empty values left out). */
export function withQuery(path: string, query: Record<string, string | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value) search.set(name, value);
  const text = search.toString();
  return text ? `${path}?${text}` : path;
}

/** A pattern's parameters when path matches it (`/runs/:runId`), else undefined. */
export function match(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split('/');
  const got = path.replace(/\/+$/, '').split('/');
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const part = want[i] as string;
    const value = got[i] as string;
    if (part.startsWith(':')) {
      if (!value) return undefined;
      try {
        params[part.slice(1)] = decodeURIComponent(value);
      } catch {
        return undefined;
      }
    } else if (part !== value) {
      return undefined;
    }
  }
  return params;
}

interface LinkProps {
  href: string;
  class?: string;
  'aria-current'?: 'page' | undefined;
  children?: ComponentChildren;
}

/** An anchor that navigates in the page; a modified click (new tab, download) is left to the browser. */
export function Link({ href, children, ...rest }: LinkProps): JSX.Element {
  const follow = (event: TargetedMouseEvent<HTMLAnchorElement>) => {
    if (event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(href);
  };
  return (
    <a {...rest} href={href} onClick={follow}>
      {children}
    </a>
  );
}
