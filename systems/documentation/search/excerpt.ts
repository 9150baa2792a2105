/**
 * The part of a section's text a result shows: all of it when it is short, else the stretch of at most
 * `maxChars` that holds the most different matched terms (then the most matches), cut at word boundaries
 * and marked `…` where text was left out. A code block cut open is closed again, so the fences pair up.
 * Pure.
 */
import { wordSpans } from './terms.ts';

const FENCE = /^```/gm;

function fences(text: string): number {
  return text.match(FENCE)?.length ?? 0;
}

interface Match {
  start: number;
  end: number;
  terms: string[];
}

/** The start and end of the best window over the matches (a sliding window), or undefined without any. */
function bestWindow(matches: Match[], maxChars: number): { start: number; end: number } | undefined {
  let best: { start: number; end: number; distinct: number; count: number } | undefined;
  const inWindow = new Map<string, number>();
  const change = (match: Match, by: 1 | -1) => {
    for (const term of match.terms) {
      const count = (inWindow.get(term) ?? 0) + by;
      if (count === 0) inWindow.delete(term);
      else inWindow.set(term, count);
    }
  };
  let first = 0;
  for (const [last, match] of matches.entries()) {
    change(match, 1);
    while (match.end - (matches[first] as Match).start > maxChars) change(matches[first++] as Match, -1);
    const distinct = inWindow.size;
    const count = last - first + 1;
    if (!best || distinct > best.distinct || (distinct === best.distinct && count > best.count)) {
      best = { start: (matches[first] as Match).start, end: match.end, distinct, count };
    }
  }
  return best;
}

export function excerpt(text: string, terms: ReadonlySet<string>, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const matches = wordSpans(text)
    .map((span) => ({ ...span, terms: span.terms.filter((term) => terms.has(term)) }))
    .filter((span) => span.terms.length > 0);
  const window = bestWindow(matches, maxChars) ?? { start: 0, end: 0 };
  // Centre the matches in the room left, then move the cut to a word boundary inside the room.
  const slack = maxChars - (window.end - window.start);
  let from = Math.max(0, window.start - Math.floor(slack / 2));
  let to = Math.min(text.length, from + maxChars);
  from = Math.max(0, to - maxChars);
  if (from > 0) {
    const space = text.slice(from, window.start).search(/\s/);
    if (space >= 0) from += space + 1;
  }
  if (to < text.length) {
    const space = text.slice(window.end, to).search(/\s\S*$/);
    if (space >= 0) to = window.end + space;
  }
  let cut = text.slice(from, to).trim();
  // The ellipsis stays outside a code block: on a line of its own before an opening fence or after a closing one.
  const opensInCode = fences(text.slice(0, from)) % 2 === 1;
  if (opensInCode) cut = `\`\`\`\n${cut}`;
  const endsInCode = fences(cut) % 2 === 1;
  if (endsInCode) cut = `${cut}\n\`\`\``;
  const before = from > 0 ? (opensInCode ? '…\n' : '… ') : '';
  const after = to < text.length ? (endsInCode ? '\n…' : ' …') : '';
  return `${before}${cut}${after}`;
}
