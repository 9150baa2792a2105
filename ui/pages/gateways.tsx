/**
 * Gateways: the connected gateway agents (GET /v1/gateways, scope systems:read), each with its targets,
 * the API replica holding its tunnel, since when, and the streams and bytes it moved. Any replica answers
 * for all of them (the holder's counters come through the store with its heartbeat: countersAt). The list
 * is read again every few seconds while the tab is visible, as the runs list is.
 */
import * as routes from '../../contract/api/route-paths.ts';
import type { Gateway } from '../api/types.ts';
import { ErrorMessage } from '../components/error-message.tsx';
import { formatBytes, formatRelative, formatTime } from '../components/format.ts';
import { ShowMore, useShownRows } from '../components/pager.tsx';
import { usePolled } from '../components/poll.ts';
import { Badge } from '../components/status.tsx';
import { Table } from '../components/table.tsx';
import { client } from '../session.ts';

export const GATEWAYS_POLL_MS = 5_000;
const ROWS_PER_PAGE = 100;

function Targets({ targets }: { targets: Gateway['targets'] }) {
  if (targets.length === 0) return <span class="muted">none</span>;
  return (
    <ul class="inline-list">
      {targets.map((target) => (
        <li key={target.name}>
          <code>{target.name}</code> <span class="muted">{target.protocol}</span>
        </li>
      ))}
    </ul>
  );
}

function GatewayRow({ gateway }: { gateway: Gateway }) {
  return (
    <tr>
      <th scope="row">
        <code>{gateway.tunnelId}</code>
      </th>
      <td>
        {gateway.connected ? (
          <Badge icon="●" word="connected" tone="success" />
        ) : (
          <Badge icon="○" word="disconnected" tone="failed" />
        )}
      </td>
      <td>
        <Targets targets={gateway.targets} />
      </td>
      <td>
        <code>{gateway.replica}</code>
      </td>
      <td>
        {formatTime(gateway.connectedSince)}
        <br />
        <span class="muted">{formatRelative(gateway.connectedSince)}</span>
      </td>
      <td>
        {gateway.streamsOpen} open
        <br />
        <span class="muted">{gateway.streamsOpened.toLocaleString()} opened</span>
      </td>
      <td>
        <span class="bytes">
          {formatBytes(gateway.bytesOut)} <span class="muted">to the agent</span>
        </span>
        <br />
        <span class="bytes">
          {formatBytes(gateway.bytesIn)} <span class="muted">from the agent</span>
        </span>
        {!gateway.heldHere && (
          <>
            <br />
            <span class="muted">counted {formatRelative(gateway.countersAt)}</span>
          </>
        )}
      </td>
    </tr>
  );
}

export function GatewaysPage() {
  const rows = useShownRows(ROWS_PER_PAGE);
  const {
    answer: list,
    error,
    updatedAt,
  } = usePolled((signal) => client().call(routes.listGateways, { signal }), GATEWAYS_POLL_MS, []);

  return (
    <section aria-labelledby="gateways-title">
      <div class="page-head">
        <h1 id="gateways-title">Gateways</h1>
        <span class="muted" role="status">
          {updatedAt ? `Updated ${updatedAt.toLocaleTimeString()}` : 'Loading…'}
        </span>
      </div>
      <p class="muted">
        Gateway agents in private networks, connected to kubeglue. A private system names one of them and one
        of its targets; its steps reach the target through the agent's tunnel.
      </p>
      <ErrorMessage error={error} title="The gateways could not be listed" />
      {list &&
        (list.data.length === 0 ? (
          <p>
            No gateway agent is connected. Start one in the private network with{' '}
            <code>kubeglue agent -config agent.yaml</code> and a key that may host gateway agents (scope{' '}
            <code>gateways:host</code>, created under Settings).
          </p>
        ) : (
          <Table
            class="gateways-table"
            caption="Connected gateway agents"
            captionHidden
            scrollLabel="Connected gateway agents"
            columns={['Tunnel', 'Status', 'Targets', 'Replica', 'Connected since', 'Streams', 'Bytes moved']}
          >
            {list.data.slice(0, rows.shown).map((gateway) => (
              <GatewayRow key={gateway.tunnelId} gateway={gateway} />
            ))}
          </Table>
        ))}
      {list && <ShowMore rows={rows} total={list.data.length} what="gateways" />}
    </section>
  );
}
