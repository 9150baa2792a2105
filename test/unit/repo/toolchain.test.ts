import { describe, expect, it } from 'vitest';

describe('toolchain', () => {
  it('runs the tests on Node.js 24 pinned by the node package', () => {
    expect(process.versions.node.split('.')[0]).toBe('24');
  });
});
