/**
 * Sends requests the way superglue's SuperglueClient (bundled in the `sg` CLI, superglue-ai/cli 1.1.35)
 * does: the endpoint without /v1, `Authorization: Bearer`, a JSON content type only with a body, undefined
 * fields left out by JSON.stringify, errors taken from `error.message`. Written for kubeglue's compatibility
 * tests, not copied. The `sg` CLI is not published to npm, so its requests are replayed rather than run.
 */

export class HttpError extends Error {
  readonly status: number;
  constructor(message: string, status: number) {
    super(message);
    this.status = status;
  }
}

export class SuperglueLikeClient {
  readonly endpoint: string;
  readonly apiKey: string;
  constructor(endpoint: string, apiKey: string) {
    this.endpoint = endpoint;
    this.apiKey = apiKey;
  }

  async response(method: string, path: string, body?: unknown, extra: Record<string, string> = {}) {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.apiKey}`, ...extra };
    if (body && method !== 'GET') headers['Content-Type'] = 'application/json';
    const res = await fetch(`${this.endpoint.replace(/\/$/, '')}${path}`, {
      method,
      headers,
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    if (!res.ok) {
      const text = await res.text();
      let message = `HTTP ${res.status}: ${text}`;
      try {
        const parsed = JSON.parse(text) as { error?: string | { message?: string } };
        if (typeof parsed.error === 'string') message = parsed.error;
        else if (parsed.error && typeof parsed.error === 'object') message = parsed.error.message ?? text;
      } catch {
        // not JSON
      }
      throw new HttpError(message, res.status);
    }
    return res;
  }

  // biome-ignore lint/suspicious/noExplicitAny: the CLI reads untyped JSON, as this does
  async request(method: string, path: string, body?: unknown, extra?: Record<string, string>): Promise<any> {
    const text = await (await this.response(method, path, body, extra)).text();
    return text ? JSON.parse(text) : undefined;
  }

  /** getTool / getRun: a 404 ("not found" in the message) is null. */
  async orNull<T>(read: Promise<T>): Promise<T | null> {
    try {
      return await read;
    } catch (error) {
      const message = (error as Error).message;
      if (message.includes('404') || message.includes('not found')) return null;
      throw error;
    }
  }
}

/** The CLI's log subscription: GET /v1/logs/stream?traceId=, `data: ` lines of the trace, until unsubscribed. */
export function subscribeToLogs(client: SuperglueLikeClient, traceId: string) {
  const controller = new AbortController();
  const messages: Array<{ message: string; level: string; traceId: string; type?: string }> = [];
  let status = 0;
  let endedByServer = false;
  const done = (async () => {
    try {
      const res = await fetch(`${client.endpoint}/v1/logs/stream?traceId=${encodeURIComponent(traceId)}`, {
        headers: { Authorization: `Bearer ${client.apiKey}` },
        signal: controller.signal,
      });
      status = res.status;
      if (!res.ok || !res.body) return;
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { done: finished, value } = await reader.read();
        if (finished) {
          endedByServer = true;
          return;
        }
        buffer += decoder.decode(value, { stream: true });
        const lines = buffer.split('\n');
        buffer = lines.pop() ?? '';
        for (const line of lines) {
          if (!line.startsWith('data: ')) continue;
          const log = JSON.parse(line.slice(6));
          if (log.traceId !== traceId || log.level === 'DEBUG') continue;
          messages.push(log);
        }
      }
    } catch (error) {
      if ((error as Error).name !== 'AbortError') throw error;
    }
  })();
  return {
    messages,
    status: () => status,
    endedByServer: () => endedByServer,
    unsubscribe: async () => {
      controller.abort();
      await done;
    },
  };
}
