/**
 * The dashboard's client of the public /v1 API, built on the client of kubeglue's own callers
 * (contract/api/route-client.ts): a call names its route and is typed from the route table,
 * `client().call(routes.getRun, { params: { runId }, signal })` with `routes` from
 * contract/api/route-paths.ts. Every call carries the signed-in key in the Authorization header (never in
 * a URL), and every failure is an ApiFailure with the error body's message, code, the catalog's hint and
 * the issues at their fields (contract/api/errors.ts), so pages show what to do next.
 */
import { RouteClient } from '../../contract/api/route-client.ts';
import * as routes from '../../contract/api/route-paths.ts';
import type { Run, RunLogEvent, RunRequest } from './types.ts';

export { ApiFailure, CLIENT_CODES } from '../../contract/api/route-client.ts';

export const API_BASE = '/v1';

/** The API as one signed-in key sees it. */
export class ApiClient extends RouteClient {
  constructor(key: string) {
    super({
      base: API_BASE,
      where: typeof location === 'undefined' ? API_BASE : location.origin,
      headers: { authorization: `Bearer ${key}` },
      cache: 'no-store',
    });
  }

  /** The tool as the Tool resource kubectl applies, in YAML. */
  async getToolManifestYaml(toolId: string, signal?: AbortSignal): Promise<string> {
    const response = await this.fetch(routes.getToolManifest, {
      params: { toolId },
      signal,
      accept: 'application/yaml',
    });
    return response.text();
  }

  /**
   * Runs a saved tool as the dashboard (requestSource frontend): synchronous (the finished run, with its
   * data) unless `options.async`, then the run just accepted.
   */
  runTool(toolId: string, request: RunRequest): Promise<Run> {
    return this.call(routes.runTool, {
      params: { toolId },
      body: { ...request, options: { ...request.options, requestSource: 'frontend' } },
    });
  }

  /** Starts a saved tool in the background, as the dashboard (requestSource frontend). */
  startRun(toolId: string, inputs: Record<string, unknown> | undefined): Promise<Run> {
    return this.runTool(toolId, { ...(inputs ? { inputs } : {}), options: { async: true } });
  }

  /**
   * Follows the live events of one run (`GET /v1/logs/stream`, Server-Sent Events) until the run ends,
   * the stream closes or the signal aborts. Read with fetch, not EventSource: EventSource cannot send the
   * Authorization header, and the key must never travel in a URL.
   */
  async followRun(runId: string, onEvent: (event: RunLogEvent) => void, signal: AbortSignal): Promise<void> {
    const response = await this.fetch(routes.streamLogs, {
      query: { runId },
      signal,
      accept: 'text/event-stream',
    });
    if (!response.body) return;
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          const event = parseServerSentEvent(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          if (event) onEvent(event);
          end = buffer.indexOf('\n\n');
        }
      }
    } finally {
      reader.releaseLock();
    }
  }
}

/** The RunLogEvent of one SSE block (`id:` and `data:` lines); comments and pings give undefined. */
export function parseServerSentEvent(block: string): RunLogEvent | undefined {
  const data = block
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).trimStart())
    .join('\n');
  if (!data) return undefined;
  try {
    return JSON.parse(data) as RunLogEvent;
  } catch {
    return undefined;
  }
}
