/**
 * The engine's side of the gateway relay on real sockets: what a step says when the relay itself is
 * out of reach (a runner Pod whose NetworkPolicy or Service is wrong), as opposed to the private system.
 */
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { dialGateway } from '../../../engine/protocols/gateway-socket.ts';

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address ? address.port : 0;
}

const route = { tunnelId: 'office', target: 'web', host: 'billing.corp.internal', port: 80 };

describe('a gateway stream', () => {
  it('names the unreachable relay, not the private system, when the relay refuses the connection', async () => {
    const port = await closedPort();
    const relay = { host: '127.0.0.1', port, token: 't'.repeat(32), runId: 'r1' };
    await expect(dialGateway(relay, route, 5_000)).rejects.toThrow(
      new RegExp(
        `^gateway office: cannot reach the gateway relay at 127\\.0\\.0\\.1:${port}: connect ECONNREFUSED`,
      ),
    );
  });

  it('says no relay is configured in a process that has none', async () => {
    await expect(dialGateway(undefined, route, 5_000)).rejects.toThrow(
      'gateway office cannot be reached from this process (no gateway relay: KUBEGLUE_GATEWAY_RELAY is not set)',
    );
  });
});
