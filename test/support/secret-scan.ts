/**
 * Looks for credential values in what a deployment exposes (API answers, notifications, metrics, log
 * lines), in every form text commonly carries them: as they are, JSON-escaped, percent-encoded (as
 * encodeURIComponent, as form encoding and as the URL parser leave them), base64, HTML-escaped. JSON
 * is searched string by string (file contents in `contentBase64` decoded), so a finding names its JSON
 * path.
 *
 * A finding says which secret, in which form, where, with a little context in which every secret is
 * masked: a failing test never prints a credential or a whole blob.
 */

export interface Secret {
  name: string;
  value: string;
}

export interface Exposed {
  /** What the text is: `GET /v1/runs/x/results`, `notification 3 body`, `process output`. */
  where: string;
  text: string;
}

export interface Finding {
  secret: string;
  form: string;
  /** The surface, plus the JSON path or line number inside it. */
  where: string;
  context: string;
}

/** Values this short are credentials only as a whole token (docs/security.md "Redaction"), as the engine treats them. */
const SHORT = 4;
const TOKEN_CHAR = /[\p{L}\p{N}_]/u;
const CONTEXT_CHARS = 40;

function jsonEscaped(value: string): string {
  return JSON.stringify(value).slice(1, -1);
}

/** Python's and PHP's default JSON: every character outside printable ASCII as \uXXXX. */
function asciiJson(value: string): string {
  return jsonEscaped(value).replace(
    /[^\x20-\x7e]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function htmlEscaped(value: string, apostrophe: string): string {
  return value
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", apostrophe);
}

/** The forms `value` takes in text, by name; identical forms are listed once. */
export function secretForms(value: string): Array<[form: string, text: string]> {
  const candidates: Array<[string, string]> = [
    ['as is', value],
    ['JSON-escaped', jsonEscaped(value)],
    ['JSON-escaped (ASCII)', asciiJson(value)],
    ['JSON-escaped (ASCII, \\/)', asciiJson(value).replaceAll('/', '\\/')],
    ['percent-encoded', encodeURIComponent(value)],
    ['form-encoded', new URLSearchParams({ v: value }).toString().slice(2)],
    ['in a parsed URL query', new URL(`http://h/?${encodeURIComponent(value)}`).search.slice(1)],
    ['base64', Buffer.from(value).toString('base64').replace(/=+$/, '')],
    ['HTML-escaped', htmlEscaped(value, '&#39;')],
    ['HTML-escaped (&#x27;)', htmlEscaped(value, '&#x27;')],
  ];
  const seen = new Set<string>();
  return candidates.filter(([, text]) => {
    if (seen.has(text)) return false;
    seen.add(text);
    return true;
  });
}

interface Form {
  secret: string;
  form: string;
  text: string;
  /** A short value: it counts only as a whole token, in every form. */
  short: boolean;
}

function formsOf(secrets: Secret[]): Form[] {
  return secrets.flatMap(({ name, value }) => {
    const short = value.length < SHORT;
    return (
      secretForms(value)
        // Base64 of a few characters would be found by chance in signatures and ids.
        .filter(([form]) => !short || form !== 'base64')
        .map(([form, text]) => ({ secret: name, form, text, short }))
    );
  });
}

function isToken(text: string, at: number, length: number): boolean {
  const before = text[at - 1];
  const after = text[at + length];
  return (
    (before === undefined || !TOKEN_CHAR.test(before)) && (after === undefined || !TOKEN_CHAR.test(after))
  );
}

/** Index of the first occurrence of `form` in `text` that counts (short values: whole tokens only). */
function indexIn(text: string, form: Form, from = 0): number {
  for (let at = text.indexOf(form.text, from); at >= 0; at = text.indexOf(form.text, at + 1)) {
    if (!form.short || isToken(text, at, form.text.length)) return at;
  }
  return -1;
}

function mask(text: string, forms: Form[]): string {
  let out = text;
  // Longest first, so a secret that contains another is masked whole.
  for (const form of [...forms].sort((a, b) => b.text.length - a.text.length)) {
    const marker = `⟦${form.secret}⟧`;
    for (let at = indexIn(out, form); at >= 0; at = indexIn(out, form, at + marker.length)) {
      out = `${out.slice(0, at)}${marker}${out.slice(at + form.text.length)}`;
    }
  }
  return out;
}

function contextOf(text: string, at: number, form: Form, forms: Form[]): string {
  const start = Math.max(0, at - CONTEXT_CHARS);
  const end = Math.min(text.length, at + form.text.length + CONTEXT_CHARS);
  const around = `${text.slice(start, at)}⟦${form.secret}: ${form.form}⟧${text.slice(at + form.text.length, end)}`;
  return `${start > 0 ? '…' : ''}${mask(around, forms).replace(/\s+/g, ' ')}${end < text.length ? '…' : ''}`;
}

/** Every string inside a JSON value, keys included, with its path; file contents decoded. */
function* strings(value: unknown, path: string): Generator<[string, string]> {
  if (typeof value === 'string') {
    yield [path, value];
  } else if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) yield* strings(item, `${path}[${index}]`);
  } else if (value && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      const childPath = path === '' ? key : `${path}.${key}`;
      yield [`${childPath} (key)`, key];
      yield* strings(child, childPath);
      if (key === 'contentBase64' && typeof child === 'string') {
        yield [`${childPath} (decoded)`, Buffer.from(child, 'base64').toString('utf8')];
      }
    }
  }
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/** The texts to search in one exposed blob: its JSON strings (whole, or per line), else its lines. */
function* textsOf(exposed: Exposed): Generator<[string, string]> {
  const whole = parseJson(exposed.text);
  if (whole.ok) {
    for (const [path, text] of strings(whole.value, ''))
      yield [`${exposed.where} → ${path || '(root)'}`, text];
    return;
  }
  for (const [index, line] of exposed.text.split('\n').entries()) {
    const where = `${exposed.where}, line ${index + 1}`;
    const parsed = line.trim().startsWith('{') ? parseJson(line) : { ok: false as const };
    if (parsed.ok) {
      for (const [path, text] of strings(parsed.value, '')) yield [`${where} → ${path}`, text];
    } else {
      yield [where, line];
    }
  }
}

export function findSecrets(secrets: Secret[], exposed: Exposed[]): Finding[] {
  const forms = formsOf(secrets);
  const findings: Finding[] = [];
  for (const blob of exposed) {
    for (const [where, text] of textsOf(blob)) {
      for (const form of forms) {
        const at = indexIn(text, form);
        if (at >= 0)
          findings.push({
            secret: form.secret,
            form: form.form,
            where,
            context: contextOf(text, at, form, forms),
          });
      }
    }
  }
  return findings;
}

/**
 * One line per secret and form, for an assertion: how often it was found, and where first with its
 * context (the same leak usually shows up on several surfaces).
 */
export function summarise(findings: Finding[]): string[] {
  const groups = Map.groupBy(findings, (finding) => `${finding.secret} (${finding.form})`);
  return [...groups].map(([key, [first, ...rest]]) => {
    const more = rest.length > 0 ? ` (and ${rest.length} more)` : '';
    return `${key} in ${first?.where}${more}: ${first?.context}`;
  });
}
