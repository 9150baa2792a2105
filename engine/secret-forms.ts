/**
 * The forms a credential value takes in text that carries it, so that redaction finds it there too
 * (pure). Where they come from:
 * - URLs in messages (a step's error names the URL it called): the value percent-encoded as a template
 *   encodes it (encodeURIComponent), as the URL parser leaves that in a query (`'` as `%27`), and as a
 *   query is re-serialised once a parameter is appended (form encoding: space as `+`, `!'()~` encoded);
 * - JSON text: a server that echoes the request in its error body (the step's error quotes the body),
 *   or a transform's JSON.stringify, escapes quotes, backslashes and line breaks. Servers write the
 *   dialects of their language: JavaScript's (only `"`, `\` and control characters), Python's default
 *   (also every character outside printable ASCII as \uXXXX) and PHP's default (that, and `/` as `\/`);
 * - HTML: a server's error page that shows the request escapes `&<>"'` (`'` as `&#39;` in JavaScript's
 *   escape-html, `&#x27;` in Python's html.escape) or, in text content, only `&<>`.
 */

function jsonEscaped(value: string): string {
  return JSON.stringify(value).slice(1, -1);
}

function asciiOnly(json: string): string {
  return json.replace(/[^\x20-\x7e]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function percentForms(value: string): string[] {
  // encodeURIComponent throws on a lone surrogate; such a value cannot be in a URL as it is either.
  if (!value.isWellFormed()) return [];
  const component = encodeURIComponent(value);
  return [
    component,
    component.replaceAll("'", '%27'),
    new URLSearchParams({ v: value }).toString().slice('v='.length),
  ];
}

function htmlForms(value: string): string[] {
  if (!/[&<>"']/.test(value)) return [];
  const text = value.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
  const attribute = text.replaceAll('"', '&quot;');
  return [text, attribute.replaceAll("'", '&#39;'), attribute.replaceAll("'", '&#x27;')];
}

/** `value` and the other texts it is written as, each once. */
export function secretForms(value: string): string[] {
  const json = jsonEscaped(value);
  const ascii = asciiOnly(json);
  return [
    ...new Set([
      value,
      ...percentForms(value),
      json,
      ascii,
      ascii.replaceAll('/', '\\/'),
      ...htmlForms(value),
    ]),
  ];
}
