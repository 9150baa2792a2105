/**
 * The documentation holds together: the README is a door (at most 250 lines) whose index links every
 * page under docs/, and every relative link in the README, docs/ and bench/README.md leads to a file that
 * exists (with its heading, when the link names one).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '..', '..', '..');

/**
 * Pages another part of the tree writes: `npm run generate` writes docs/configuration.md from the
 * settings registry (config/). Linked before that generator exists, so not required to exist yet.
 */
function markdownFiles(folder: string): string[] {
  return readdirSync(join(REPO, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.md'))
    .map((entry) => relative(REPO, join(entry.parentPath, entry.name)).split('\\').join('/'));
}

/** Relative link targets of a page, code blocks left out: [text](target). */
function links(page: string): string[] {
  const text = readFileSync(join(REPO, page), 'utf8').replace(/^```[\s\S]*?^```$/gm, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1] as string)
    .filter((target) => !/^[a-z]+:/.test(target));
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes. */
function anchors(page: string): Set<string> {
  const text = readFileSync(join(REPO, page), 'utf8').replace(/^```[\s\S]*?^```$/gm, '');
  const headings = [...text.matchAll(/^#+ (.+)$/gm)].map((match) =>
    (match[1] as string)
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-'),
  );
  const ids = [...text.matchAll(/<a id="([^"]+)">/g)].map((match) => match[1] as string);
  return new Set([...headings, ...ids]);
}

const PAGES = ['README.md', 'bench/README.md', ...markdownFiles('docs')];

describe('the documentation pages', () => {
  it('keep the README within 250 lines', () => {
    const lines = readFileSync(join(REPO, 'README.md'), 'utf8').trimEnd().split('\n');
    expect(lines.length).toBeLessThanOrEqual(250);
  });

  it("link every page under docs/ from the README's index", () => {
    const linked = new Set(links('README.md'));
    const pages = [...markdownFiles('docs'), 'docs/openapi.json'];
    expect(pages.filter((page) => !linked.has(page))).toEqual([]);
  });

  it.each(PAGES)('%s: every relative link leads to a file and heading that exist', (page) => {
    const broken = links(page).filter((link) => {
      const [path, anchor] = link.split('#') as [string, string | undefined];
      const target = path
        ? relative(REPO, join(REPO, dirname(page), path))
            .split('\\')
            .join('/')
        : page;
      if (!existsSync(join(REPO, target))) return true;
      return anchor !== undefined && target.endsWith('.md') && !anchors(target).has(anchor);
    });
    expect(broken).toEqual([]);
  });
});
