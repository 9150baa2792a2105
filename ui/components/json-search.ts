/**
 * Searching a JSON value of any size without freezing the tab: the walk is iterative (no recursion limit
 * on deep values) and gives the browser back its thread every few milliseconds.
 */

export type JsonPath = (string | number)[];

export interface JsonMatch {
  path: JsonPath;
  /** The matching key or value, cut to a line. */
  preview: string;
}

export interface SearchOptions {
  maxMatches?: number;
  /** How long the walk runs before it yields to the browser. */
  sliceMs?: number;
  signal?: AbortSignal;
}

const PREVIEW_CHARS = 120;

function preview(text: string, at: number): string {
  const start = Math.max(0, at - 40);
  const cut = text.slice(start, start + PREVIEW_CHARS);
  return `${start > 0 ? '…' : ''}${cut}${start + PREVIEW_CHARS < text.length ? '…' : ''}`;
}

const yieldToBrowser = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/** Keys and scalar values containing `query` (case-insensitive), in document order. */
export async function searchJson(
  value: unknown,
  query: string,
  options: SearchOptions = {},
): Promise<{ matches: JsonMatch[]; complete: boolean }> {
  const needle = query.toLowerCase();
  const maxMatches = options.maxMatches ?? 100;
  const sliceMs = options.sliceMs ?? 8;
  const matches: JsonMatch[] = [];
  const stack: { value: unknown; path: JsonPath }[] = [{ value, path: [] }];
  let sliceStart = performance.now();
  let visited = 0;
  while (stack.length > 0) {
    if (++visited % 512 === 0 && performance.now() - sliceStart > sliceMs) {
      await yieldToBrowser();
      if (options.signal?.aborted) return { matches, complete: false };
      sliceStart = performance.now();
    }
    const { value: node, path } = stack.pop() as { value: unknown; path: JsonPath };
    if (node !== null && typeof node === 'object') {
      const children: { value: unknown; path: JsonPath }[] = [];
      if (Array.isArray(node)) {
        for (let i = 0; i < node.length; i++) children.push({ value: node[i], path: [...path, i] });
      } else {
        for (const [key, child] of Object.entries(node)) {
          const at = key.toLowerCase().indexOf(needle);
          if (at >= 0) {
            matches.push({ path: [...path, key], preview: preview(key, at) });
            if (matches.length >= maxMatches) return { matches, complete: false };
          }
          children.push({ value: child, path: [...path, key] });
        }
      }
      // Reversed onto the stack, so matches come out in document order.
      for (let i = children.length - 1; i >= 0; i--)
        stack.push(children[i] as { value: unknown; path: JsonPath });
      continue;
    }
    const text = typeof node === 'string' ? node : String(node);
    const at = text.toLowerCase().indexOf(needle);
    if (at >= 0) {
      matches.push({ path, preview: preview(text, at) });
      if (matches.length >= maxMatches) return { matches, complete: false };
    }
  }
  return { matches, complete: true };
}

/** `$.items[3].name`, as people read paths. */
export function pathText(path: Readonly<JsonPath>): string {
  return path
    .map((part) =>
      typeof part === 'number'
        ? `[${part}]`
        : /^[A-Za-z_$][\w$]*$/.test(part)
          ? `.${part}`
          : `[${JSON.stringify(part)}]`,
    )
    .reduce((text, part) => text + part, '$');
}
