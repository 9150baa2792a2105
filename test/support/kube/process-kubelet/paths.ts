/**
 * Pure string work for running a "container" as a local process: mapping in-container absolute
 * paths to the Pod's directory, and Kubernetes' `$(VAR)` expansion.
 */

/** An in-container path and where it really lives on this machine. */
export interface PathMapping {
  containerPath: string;
  hostPath: string;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Returns a function that rewrites every in-container path of `mappings` appearing as a path prefix
 * in a string (at its start or after a non-path character such as `=` or a space, and followed by
 * `/`, the end, or a non-path character), so `--config=/etc/app/x.json` becomes
 * `--config=<pod dir>/volumes/app/x.json`. One regex pass with the longest paths first: nested
 * mounts win over their parents, and a rewritten path is never rewritten again (the pod dir usually
 * lives under /tmp, itself a mapped path).
 */
export function pathMapper(mappings: PathMapping[]): (text: string) => string {
  const byPath = new Map<string, string>();
  for (const { containerPath, hostPath } of mappings) {
    const normalized = containerPath.replace(/\/+$/, '');
    // A mount at "/" cannot be mapped without rewriting every absolute path: skip it.
    if (normalized.startsWith('/') && !byPath.has(normalized)) byPath.set(normalized, hostPath);
  }
  if (byPath.size === 0) return (text) => text;
  const alternatives = [...byPath.keys()].sort((a, b) => b.length - a.length).map(escapeRegExp);
  const pattern = new RegExp(`(?<![\\w.~/-])(?:${alternatives.join('|')})(?![\\w.~-])`, 'g');
  return (text) => text.replace(pattern, (match) => byPath.get(match) ?? match);
}

/**
 * Kubernetes' variable expansion for env values, command and args: `$(NAME)` becomes the variable's
 * value when it is defined and stays as written when not; `$$` is an escaped `$`.
 */
export function expandVariables(input: string, lookup: (name: string) => string | undefined): string {
  let output = '';
  for (let i = 0; i < input.length; i++) {
    const char = input[i];
    if (char === '$' && i + 1 < input.length) {
      const next = input[i + 1];
      if (next === '$') {
        output += '$';
        i++;
        continue;
      }
      if (next === '(') {
        const close = input.indexOf(')', i + 2);
        if (close > i + 2) {
          const name = input.slice(i + 2, close);
          output += lookup(name) ?? `$(${name})`;
          i = close;
          continue;
        }
      }
    }
    output += char;
  }
  return output;
}
