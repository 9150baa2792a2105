import { KG_ERR_CHAIN_TARGET_FORBIDDEN, KG_ERR_WEBHOOK_URL_CREDENTIALS } from '../contract/api/errors.ts';
import { hasUrlCredentials } from '../systems/url-credentials.ts';

/** `options.webhookUrl: "tool:<id>"` chains the tool instead of notifying a URL. */
const CHAIN_PREFIX = 'tool:';

/** The tool a webhookUrl chains to, or undefined for an HTTP notification URL. */
export function chainTarget(webhookUrl: string | undefined): string | undefined {
  return webhookUrl?.startsWith(CHAIN_PREFIX) ? webhookUrl.slice(CHAIN_PREFIX.length) : undefined;
}

/**
 * Checks `options.webhookUrl` when a run is accepted: a chain target must be a tool the caller may use (a
 * key limited to some tools cannot reach others through a chain), and a notification URL carries no
 * credentials (it is stored and returned with the run; notifications are signed instead).
 */
export function checkWebhookUrl(webhookUrl: string | undefined, mayUse: (toolId: string) => boolean): void {
  if (webhookUrl === undefined) return;
  const target = chainTarget(webhookUrl);
  if (target !== undefined) {
    // Decided without looking the target up: the answer is the same whether it exists or not.
    if (!mayUse(target)) throw KG_ERR_CHAIN_TARGET_FORBIDDEN(target);
    return;
  }
  if (hasUrlCredentials(webhookUrl)) throw KG_ERR_WEBHOOK_URL_CREDENTIALS();
}
