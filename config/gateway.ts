/** Settings of the gateway endpoint and relay of the API processes (tunnels to private networks). */
import { z } from 'zod';
import { hostPort, port, positiveInt, text } from './schemas.ts';
import { API_ROLES, section, setting } from './setting.ts';

export const GATEWAY = section(
  'Gateways',
  'Tunnels from gateway agents in private networks: how steps wait for them, and the relay through which ' +
    'engine workers, runner Pods and the other api replicas reach the replica that holds a tunnel. The ' +
    'agent itself reads only its configuration file.',
  {
    gateway: {
      connectWaitMs: setting(
        'KUBEGLUE_GATEWAY_CONNECT_WAIT_MS',
        positiveInt,
        '5000',
        API_ROLES,
        'how long a step waits for a tunnel that is not connected (an agent reconnecting) before failing with `gateway <id> is not connected`; the step is not retried after that wait',
      ),
      openTimeoutMs: setting(
        'KUBEGLUE_GATEWAY_OPEN_TIMEOUT_MS',
        positiveInt,
        '10000',
        API_ROLES,
        'how long the agent may take to connect a stream to its target',
      ),
      streamLimit: setting(
        'KUBEGLUE_GATEWAY_STREAM_LIMIT',
        positiveInt,
        '1000',
        API_ROLES,
        'streams open at once per tunnel; more fail the step',
      ),
    },
    relay: {
      host: setting(
        'KUBEGLUE_GATEWAY_RELAY_HOST',
        text,
        '127.0.0.1',
        API_ROLES,
        "where the relay listens; loopback serves this process's engine workers only (the chart: 0.0.0.0)",
      ),
      port: setting(
        'KUBEGLUE_GATEWAY_RELAY_PORT',
        port,
        '0',
        API_ROLES,
        "the relay's port (0: a free port; the chart: 8082)",
      ),
      advertise: setting(
        'KUBEGLUE_GATEWAY_RELAY_ADVERTISE',
        hostPort.optional(),
        undefined,
        API_ROLES,
        'host:port the other replicas dial (unset: $POD_IP:<port>, else the listen address)',
      ),
      heartbeatMs: setting(
        'KUBEGLUE_GATEWAY_HEARTBEAT_MS',
        positiveInt,
        '5000',
        API_ROLES,
        'how often a holder refreshes its tunnels in the store (their lease: three times this)',
      ),
      podIp: setting(
        'POD_IP',
        z.string().optional(),
        undefined,
        API_ROLES,
        "the Pod's IP from the downward API (the chart sets it): advertised when the relay listens on a wildcard address",
      ),
    },
  },
);
