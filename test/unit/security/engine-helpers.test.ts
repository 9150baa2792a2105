/**
 * The pure helpers behind issue 7's engine items: SQL and URL template checks (shared with save-time
 * validation), the redactor's rules, and the redirect rules of HTTP steps.
 */
import { describe, expect, it } from 'vitest';
import { nextHop } from '../../../engine/protocols/http-redirect.ts';
import { Redactor } from '../../../engine/redact.ts';
import { renderStepUrl, urlTemplateProblems } from '../../../engine/url-template.ts';

const noEvaluate = async () => {
  throw new Error('no functions here');
};

describe('URL templates', () => {
  it('lists expressions inside the host for save-time validation', () => {
    expect(urlTemplateProblems('https://<<tenant>>.example.com/x')).toHaveLength(1);
    expect(urlTemplateProblems('https://api.example.com:<<port>>/x')).toHaveLength(1);
    expect(urlTemplateProblems('<<base>>/users/<<id>>?q=<<q>>')).toEqual([]);
    expect(urlTemplateProblems('postgres://app:<<pw>>@db/app')).toEqual([]);
    expect(urlTemplateProblems('/users/<<id>>')).toEqual([]);
  });

  it('encodes by position and renders numbers as themselves', async () => {
    const render = (url: string, data: Record<string, string | number>) =>
      renderStepUrl(url, data, noEvaluate);
    expect(await render('https://a.test/p/<<x>>/<<n>>?q=<<x>>#<<x>>', { x: 'a b/c?d', n: 7 })).toBe(
      'https://a.test/p/a%20b%2Fc%3Fd/7?q=a%20b%2Fc%3Fd#a%20b%2Fc%3Fd',
    );
    expect(await render('<<base>>/x', { base: 'https://h.test/api?v=1' })).toBe('https://h.test/api?v=1/x');
    await expect(render('https://a.test/<<x>>/y', { x: '%2e%2E' })).resolves.toBe(
      'https://a.test/%252e%252E/y',
    );
    await expect(render('https://a.test/<<x>>', { x: '.' })).rejects.toThrow('cannot be "." or ".."');
  });
});

describe('Redactor', () => {
  it('replaces short secrets only as whole tokens and keeps placeholders intact', () => {
    const redactor = new Redactor();
    redactor.add('pw', '<<db_pw>>');
    redactor.add('long-secret-value', '<<db_token>>');
    expect(redactor.string('pw')).toBe('<<db_pw>>');
    expect(redactor.string('user=ada&pw=pw; pwd, apw, pw_x, "pw"')).toBe(
      'user=ada&<<db_pw>>=<<db_pw>>; pwd, apw, pw_x, "<<db_pw>>"',
    );
    expect(redactor.string('x long-secret-value y')).toBe('x <<db_token>> y');
    expect(redactor.value({ pw: 'pw', table: 'pw table' })).toEqual({
      pw: '<<db_pw>>',
      table: '<<db_pw>> table',
    });
  });

  it("leaves the placeholders it put in whole when a secret is part of another's placeholder name", () => {
    const redactor = new Redactor();
    redactor.add('alice-in-shop', '<<shop_username>>');
    // The value of one credential is the system id in another's placeholder.
    redactor.add('shop', '<<crm_tenant>>');
    expect(redactor.string('alice-in-shop buys at shop')).toBe('<<shop_username>> buys at <<crm_tenant>>');
    // A secret that contains a placeholder's text is still replaced whole.
    redactor.add('x<<crm_tenant>>y', '<<crm_odd>>');
    expect(redactor.string('a x<<crm_tenant>>y b')).toBe('a <<crm_odd>> b');
    expect(redactor.value({ 'alice-in-shop': 'shop' })).toEqual({ '<<shop_username>>': '<<crm_tenant>>' });
  });

  it('replaces a secret in the forms URLs and JSON text carry it in', () => {
    const secret = `k'ey "q"\\/é!~`;
    const redactor = new Redactor();
    redactor.add(secret, '<<s_k>>');
    const url = new URL('https://a.test/x');
    url.searchParams.append('q', secret);
    const inline = new URL(`https://a.test/x?q=${encodeURIComponent(secret)}`);
    const json = JSON.stringify({ echo: secret });
    const python = json.replace(
      /[^\x20-\x7e]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
    const texts = {
      raw: `said ${secret}`,
      // The query of a URL a step called, once a parameter was appended (form encoding)…
      appended: `HTTP 500 GET ${url}`,
      // …and as the URL parser leaves a templated value (`'` as %27).
      inline: `HTTP 500 GET ${inline}`,
      // An echoing server's error body, as JavaScript, Python and PHP write JSON.
      javascript: `HTTP 500: ${json}`,
      python: `HTTP 500: ${python}`,
      php: `HTTP 500: ${python.replaceAll('/', '\\/')}`,
    };
    expect(texts.appended).not.toContain(encodeURIComponent(secret));
    expect(texts.inline).not.toContain(encodeURIComponent(secret));
    expect(redactor.value(texts)).toEqual({
      raw: 'said <<s_k>>',
      appended: 'HTTP 500 GET https://a.test/x?q=<<s_k>>',
      inline: 'HTTP 500 GET https://a.test/x?q=<<s_k>>',
      javascript: 'HTTP 500: {"echo":"<<s_k>>"}',
      python: 'HTTP 500: {"echo":"<<s_k>>"}',
      php: 'HTTP 500: {"echo":"<<s_k>>"}',
    });
  });

  it('replaces a secret in the forms an HTML error page escapes it to', () => {
    const secret = `p&ss<w>"o'rd`;
    const redactor = new Redactor();
    redactor.add(secret, '<<s_pw>>');
    const texts = {
      // Express's escape-html, Python's html.escape, and text content that escapes only &<>.
      expressPage: `<p>bad password &quot;${secret.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&#39;')}&quot;</p>`,
      pythonPage: `<td>${secret.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&#x27;')}</td>`,
      textPage: `<pre>${secret.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')}</pre>`,
    };
    expect(redactor.value(texts)).toEqual({
      expressPage: '<p>bad password &quot;<<s_pw>>&quot;</p>',
      pythonPage: '<td><<s_pw>></td>',
      textPage: '<pre><<s_pw>></pre>',
    });
  });

  it('scrubs text inside file references and leaves binary ones alone', () => {
    const redactor = new Redactor();
    redactor.add('s3cr3t-token', '<<k>>');
    const text = {
      __file__: true,
      filename: 'a.txt',
      contentType: 'text/plain',
      size: 15,
      contentBase64: Buffer.from('v=s3cr3t-token\n').toString('base64'),
    };
    const binary = {
      ...text,
      contentBase64: Buffer.from([0, ...Buffer.from('s3cr3t-token')]).toString('base64'),
    };
    const out = redactor.value({ text, binary });
    expect(Buffer.from(out.text.contentBase64, 'base64').toString()).toBe('v=<<k>>\n');
    expect(out.text.size).toBe(8);
    expect(out.binary).toEqual(binary);
  });
});

describe('redirect rules', () => {
  const carriers = { headers: new Set(['x-api-key']), query: [['key', 'k1'] as const] };
  const hop = {
    method: 'POST',
    url: new URL('https://a.test/start?key=k1'),
    headers: {
      'X-Api-Key': 'k1',
      Authorization: 'Bearer t',
      'Content-Type': 'application/json',
      Accept: '*/*',
    },
    body: '{}',
  };

  it('keeps credentials on the same origin and drops them on another', () => {
    expect(nextHop(hop, 307, '/next?key=k1', carriers).headers).toEqual(hop.headers);
    const away = nextHop(hop, 307, 'https://b.test/next?key=k1&other=1', carriers);
    expect(away.headers).toEqual({ 'Content-Type': 'application/json', Accept: '*/*' });
    expect(away.url.toString()).toBe('https://b.test/next?other=1');
    expect(away.body).toBe('{}');
    // Another port or scheme is another origin too.
    expect(nextHop(hop, 307, 'http://a.test/next', carriers).headers).not.toHaveProperty('X-Api-Key');
  });

  it('turns POST into GET without body on 301/302/303', () => {
    for (const status of [301, 302, 303]) {
      const next = nextHop(hop, status, '/n', carriers);
      expect([next.method, next.body, next.headers['Content-Type']]).toEqual(['GET', undefined, undefined]);
    }
    expect(() => nextHop(hop, 302, 'file:///etc/passwd', carriers)).toThrow('only http(s) is followed');
  });
});
