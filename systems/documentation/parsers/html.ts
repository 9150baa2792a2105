/**
 * HTML pages reduced to their main text (split into sections at headings), code blocks and links. Navigation,
 * headers, footers, scripts and styles are dropped; when the page marks its main content (`<main>`,
 * `<article>`, `role="main"`), only that is kept. Pure; htmlparser2's streaming parser, no DOM.
 */
import { Parser } from 'htmlparser2';
import { collapseWhitespace, MAX_SECTION_CHARS, type TextDocument, type TextSection } from './summary.ts';

const SKIPPED = new Set([
  'script',
  'style',
  'noscript',
  'template',
  'svg',
  'nav',
  'header',
  'footer',
  'aside',
  'form',
  'iframe',
  'head',
]);
const HEADINGS = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6']);
const BLOCKS = new Set([
  'p',
  'div',
  'br',
  'li',
  'tr',
  'td',
  'th',
  'section',
  'table',
  'ul',
  'ol',
  'dl',
  'dt',
  'dd',
  'blockquote',
  'hr',
]);

type Event =
  | { type: 'heading'; text: string; main: boolean; anchor?: string | undefined }
  | { type: 'text'; text: string; main: boolean }
  | { type: 'code'; text: string; main: boolean };

export interface ParsedHtml {
  document: TextDocument;
  /** Absolute http(s) URLs of the page's links, without fragments, in document order. */
  links: string[];
}

function absolute(href: string, base: string | undefined): string | undefined {
  try {
    const url = base ? new URL(href, base) : new URL(href);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    url.hash = '';
    return url.toString();
  } catch {
    return undefined;
  }
}

export function parseHtml(html: string, source: string, baseUrl?: string): ParsedHtml {
  const events: Event[] = [];
  const links: string[] = [];
  const seenLinks = new Set<string>();
  let skipDepth = 0;
  let mainDepth = 0;
  let heading: string[] | undefined;
  /** The open heading's id, or the id or name of an anchor inside it (`<h2><a name="x">`). */
  let headingAnchor: string | undefined;
  let pre: string[] | undefined;
  let preDepth = 0;
  let title: string[] | undefined;
  let titleText = '';
  let base = baseUrl;
  const stack: Array<{ name: string; main: boolean }> = [];

  const parser = new Parser(
    {
      onopentag(name, attributes) {
        const main = name === 'main' || name === 'article' || attributes.role === 'main';
        stack.push({ name, main });
        if (main) mainDepth += 1;
        if (name === 'title') title = [];
        if (name === 'base' && attributes.href) base = absolute(attributes.href, baseUrl) ?? base;
        if (name === 'a' && attributes.href) {
          const link = absolute(attributes.href, base);
          if (link && !seenLinks.has(link)) {
            seenLinks.add(link);
            links.push(link);
          }
        }
        if (SKIPPED.has(name)) skipDepth += 1;
        if (skipDepth > 0) return;
        if (HEADINGS.has(name)) {
          heading = [];
          headingAnchor = attributes.id || undefined;
        } else if (heading && name === 'a') headingAnchor ??= attributes.id || attributes.name || undefined;
        else if (name === 'pre') {
          preDepth += 1;
          pre ??= [];
        } else if (BLOCKS.has(name) && !pre) events.push({ type: 'text', text: '\n', main: mainDepth > 0 });
      },
      ontext(text) {
        if (title) title.push(text);
        if (skipDepth > 0) return;
        if (pre) pre.push(text);
        else if (heading) heading.push(text);
        else events.push({ type: 'text', text, main: mainDepth > 0 });
      },
      onclosetag(name) {
        // Unbalanced markup: close up to the matching open tag.
        let index = stack.length - 1;
        while (index >= 0 && stack[index]?.name !== name) index -= 1;
        if (index < 0) return;
        const closing = stack.splice(index);
        for (const tag of closing.reverse()) close(tag);
      },
    },
    { decodeEntities: true, lowerCaseTags: true, recognizeSelfClosing: true },
  );

  function close(tag: { name: string; main: boolean }): void {
    const { name } = tag;
    if (name === 'title' && title) {
      titleText = collapseWhitespace(title.join(''));
      title = undefined;
    }
    if (SKIPPED.has(name)) {
      skipDepth -= 1;
    } else if (skipDepth === 0) {
      if (HEADINGS.has(name) && heading) {
        const text = collapseWhitespace(heading.join(' '));
        if (text) events.push({ type: 'heading', text, main: mainDepth > 0, anchor: headingAnchor });
        heading = undefined;
        headingAnchor = undefined;
      } else if (name === 'pre' && pre) {
        preDepth -= 1;
        if (preDepth === 0) {
          const code = pre.join('').replace(/^\n+|\s+$/g, '');
          if (code) events.push({ type: 'code', text: code, main: mainDepth > 0 });
          pre = undefined;
        }
      } else if (BLOCKS.has(name)) {
        events.push({ type: 'text', text: '\n', main: mainDepth > 0 });
      }
    }
    if (tag.main) mainDepth -= 1;
  }

  parser.write(html);
  parser.end();

  const hasMain = events.some((event) => event.main && event.text.trim() !== '');
  const kept = hasMain ? events.filter((event) => event.main) : events;
  const document: TextDocument = { kind: 'text', source, format: 'html', sections: toSections(kept) };
  if (titleText) document.title = titleText;
  return { document, links };
}

function toSections(events: Event[]): TextSection[] {
  const sections: TextSection[] = [];
  let current: { heading?: string; anchor?: string | undefined; text: string[]; code: string[] } = {
    text: [],
    code: [],
  };
  const flush = () => {
    const text = collapseWhitespace(current.text.join('')).slice(0, MAX_SECTION_CHARS);
    if (text || current.code.length > 0) {
      const section: TextSection = { text };
      if (current.heading) section.heading = current.heading;
      if (current.anchor) section.anchor = current.anchor.slice(0, 200);
      if (current.code.length > 0) section.code = current.code;
      sections.push(section);
    }
  };
  for (const event of events) {
    if (event.type === 'heading') {
      flush();
      current = { heading: event.text, anchor: event.anchor, text: [], code: [] };
    } else if (event.type === 'code') {
      current.code.push(event.text.slice(0, MAX_SECTION_CHARS));
    } else {
      current.text.push(event.text);
    }
  }
  flush();
  return sections;
}
