/** Markdown and plain text split into sections. Pure. */
import { collapseWhitespace, MAX_SECTION_CHARS, type TextDocument, type TextSection } from './summary.ts';

const ATX_HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/** Sections start at ATX headings (`# …`); fenced code blocks are kept apart from the text. */
export function parseMarkdown(markdown: string, source: string): TextDocument {
  const sections: TextSection[] = [];
  let heading: string | undefined;
  let text: string[] = [];
  let code: string[] = [];
  let fence: { marker: string; lines: string[] } | undefined;
  const flush = () => {
    const body = collapseWhitespace(text.join('\n')).slice(0, MAX_SECTION_CHARS);
    if (body || code.length > 0) {
      const section: TextSection = { text: body };
      if (heading) section.heading = heading;
      if (code.length > 0) section.code = code;
      sections.push(section);
    }
    text = [];
    code = [];
  };
  for (const line of markdown.split(/\r?\n/)) {
    if (fence) {
      const closing = FENCE.exec(line);
      if (closing?.[1]?.startsWith(fence.marker[0] as string) && closing[1].length >= fence.marker.length) {
        code.push(fence.lines.join('\n').slice(0, MAX_SECTION_CHARS));
        fence = undefined;
      } else {
        fence.lines.push(line);
      }
      continue;
    }
    const opening = FENCE.exec(line);
    if (opening?.[1]) {
      fence = { marker: opening[1], lines: [] };
      continue;
    }
    const match = ATX_HEADING.exec(line);
    if (match) {
      flush();
      heading = match[2] || undefined;
      continue;
    }
    text.push(line);
  }
  if (fence) code.push(fence.lines.join('\n').slice(0, MAX_SECTION_CHARS));
  flush();
  const title = sections.find((section) => section.heading)?.heading;
  return { kind: 'text', source, format: 'markdown', ...(title ? { title } : {}), sections };
}

const TEXT_SECTION_TARGET = 4_000;

/**
 * Paragraphs (blank-line separated) grouped into sections of about 4 000 characters. With `pageLabels`, the
 * text's pages are separated by form feeds: each section stays on one page and carries its number.
 */
export function parsePlainText(
  text: string,
  source: string,
  format: 'text' | 'pdf' = 'text',
  pageLabels?: string[],
): TextDocument {
  const pages = pageLabels ? text.split('\f') : [text];
  const sections: TextSection[] = [];
  pages.forEach((page, index) => {
    let chunk: string[] = [];
    let size = 0;
    let part = 0;
    const flush = () => {
      const body = collapseWhitespace(chunk.join('\n\n')).slice(0, MAX_SECTION_CHARS);
      if (body) {
        const label = pageLabels?.[index];
        const heading = label ? (part > 0 ? `${label} (continued)` : label) : undefined;
        const section: TextSection = heading ? { heading, text: body } : { text: body };
        if (pageLabels) section.page = index + 1;
        sections.push(section);
        part += 1;
      }
      chunk = [];
      size = 0;
    };
    for (const paragraph of page.split(/\n\s*\n/)) {
      if (size + paragraph.length > TEXT_SECTION_TARGET && size > 0) flush();
      chunk.push(paragraph);
      size += paragraph.length;
    }
    flush();
  });
  return { kind: 'text', source, format, sections };
}
