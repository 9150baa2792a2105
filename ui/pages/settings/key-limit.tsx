/** Ids and scopes as a key holds them: a wrapping list of code. */
export function CodeList({ items }: { items: readonly string[] }) {
  return (
    <ul class="inline-list">
      {items.map((item) => (
        <li key={item}>
          <code>{item}</code>
        </li>
      ))}
    </ul>
  );
}

/** The tools or systems a key is limited to: every one (null), none, or the list of ids. */
export function KeyLimit({ ids, everything }: { ids: readonly string[] | null; everything: string }) {
  if (ids === null) return <>{everything}</>;
  if (ids.length === 0) return <>none</>;
  return <CodeList items={ids} />;
}
