/**
 * When the real-node suites run: as root with the caches prepare.sh makes. Elsewhere they are skipped,
 * except under CI=true, where a missing node is an error (the suite must not pass by not running).
 */
import { describe, it } from 'vitest';
import { realNodeMissing } from '../support/kube-node/node.ts';

/**
 * describe() on the real node: skipped locally without it, one failing test naming why under CI.
 * `services`: the suite needs Service routing (kube-proxy).
 */
export function describeRealNode(name: string, body: () => void, options: { services?: boolean } = {}): void {
  const missing = realNodeMissing(options);
  if (!missing) {
    describe(name, body);
  } else if (process.env.CI === 'true') {
    describe(name, () => {
      it('has a real node to run on', () => {
        throw new Error(`${missing} (.ci/run calls test/support/kube-node/prepare.sh)`);
      });
    });
  } else {
    describe.skip(`${name} (skipped: ${missing})`, body);
  }
}
