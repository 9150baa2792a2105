/**
 * Whether the screen is a phone's: narrower than 40rem, the width below which styles.css lays the pages
 * out in one column (its `@media (max-width: 40rem)` rules), followed as the window changes.
 */
import { useEffect, useState } from 'preact/hooks';

const NARROW_SCREEN = '(max-width: 40rem)';

export function useNarrowScreen(): boolean {
  const [narrow, setNarrow] = useState(() => matchMedia(NARROW_SCREEN).matches);
  useEffect(() => {
    const query = matchMedia(NARROW_SCREEN);
    const changed = () => setNarrow(query.matches);
    query.addEventListener('change', changed);
    return () => query.removeEventListener('change', changed);
  }, []);
  return narrow;
}
