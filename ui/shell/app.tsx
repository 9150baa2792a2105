/**
 * The frame every page sits in: a skip link, the navigation (PAGES with a nav label), who is signed in and
 * sign out, and the page itself in <main>. Signed out, every path shows the sign-in form and stays where it
 * is, so the page asked for opens after signing in. On each navigation the title changes and focus moves
 * to <main>, as a screen reader user expects after following a link.
 */
import { useEffect, useRef } from 'preact/hooks';
import { SignInPage } from '../pages/sign-in.tsx';
import { HOME, PAGES, type PageDefinition } from '../pages.tsx';
import { Link, location, match, navigate } from '../router.tsx';
import { restoring, session, signOut } from '../session.ts';

function resolve(path: string): { page: PageDefinition; params: Record<string, string> } | undefined {
  for (const page of PAGES) {
    const params = match(page.path, path);
    if (params) return { page, params };
  }
  return undefined;
}

function NotFound({ path }: { path: string }) {
  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title">Page not found</h1>
      <p>
        The dashboard has no page at <code>{path}</code>. <Link href={HOME}>Go to the runs</Link>.
      </p>
    </section>
  );
}

function Navigation({ path }: { path: string }) {
  return (
    <nav class="nav" aria-label="Main">
      <ul>
        {PAGES.filter((page) => page.nav).map((page) => {
          const current = path === page.path || path.startsWith(`${page.path}/`);
          return (
            <li key={page.path}>
              <Link href={page.path} aria-current={current ? 'page' : undefined}>
                {page.nav}
              </Link>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}

export function App() {
  const { path } = location.value;
  const current = session.value;
  const main = useRef<HTMLElement>(null);
  const resolved = resolve(path);
  const title = !current ? 'Sign in' : resolved ? resolved.page.title(resolved.params) : 'Page not found';

  useEffect(() => {
    if (path === '/' || path === '') navigate(HOME, { replace: true });
  }, [path]);
  useEffect(() => {
    document.title = `${title} · kubeglue`;
  }, [title]);
  const first = useRef(true);
  useEffect(() => {
    // Not on the first load: focus stays where the browser puts it (the sign-in form moves it itself).
    if (first.current) {
      first.current = false;
      return;
    }
    main.current?.focus();
  }, [path]);

  return (
    <>
      <a class="skip-link" href="#content">
        Skip to content
      </a>
      <header class="topbar">
        <Link href={HOME} class="brand">
          kubeglue
        </Link>
        {current && <Navigation path={path} />}
        {current && (
          <div class="who">
            <span>
              Signed in as <Link href="/settings">{current.me.name}</Link>
            </span>
            <button type="button" class="secondary" onClick={signOut}>
              Sign out
            </button>
          </div>
        )}
      </header>
      <main id="content" ref={main} tabIndex={-1}>
        {restoring.value ? (
          <p role="status">Signing in…</p>
        ) : !current ? (
          <SignInPage />
        ) : resolved ? (
          <resolved.page.component key={path} params={resolved.params} />
        ) : (
          <NotFound path={path} />
        )}
      </main>
    </>
  );
}
