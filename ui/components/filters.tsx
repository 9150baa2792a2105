/**
 * A list page's filters, kept in its address (`/runs?toolId=…&status=…`): read from the query, and the
 * button that clears them.
 */
import { navigate } from '../router.tsx';

/** The filters of `names` the query gives a value. */
export function filtersOf<F extends string>(
  query: URLSearchParams,
  names: readonly F[],
): Partial<Record<F, string>> {
  const filters: Partial<Record<F, string>> = {};
  for (const name of names) {
    const value = query.get(name);
    if (value) filters[name] = value;
  }
  return filters;
}

/** "Clear filters" while any is set: back to the list at `path` without them. */
export function ClearFilters({ filters, path }: { filters: object; path: string }) {
  if (Object.keys(filters).length === 0) return null;
  return (
    <button type="button" class="secondary" onClick={() => navigate(path, { replace: true })}>
      Clear filters
    </button>
  );
}
