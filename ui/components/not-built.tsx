/** What a page that is not built yet says: no made-up content, and where the same thing is in the API. */

export function NotBuiltNote({ what, api }: { what: string; api: string }) {
  return (
    <p class="not-built">
      <strong>Not built yet.</strong> {what} will be here. Until then the API does it: <code>{api}</code>{' '}
      (described in <a href="/v1/openapi.json">/v1/openapi.json</a>).
    </p>
  );
}

/** A whole page that is not built yet. */
export function notBuiltPage(title: string, what: string, api: string) {
  return function NotBuiltPage() {
    return (
      <section aria-labelledby="page-title">
        <h1 id="page-title">{title}</h1>
        <NotBuiltNote what={what} api={api} />
      </section>
    );
  };
}
