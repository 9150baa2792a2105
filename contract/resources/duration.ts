/**
 * A duration as people read it in `kubectl get` (ToolRun `status.duration`): `340ms`, `1.2s`, `12.5s`,
 * `3m4s`, `1h2m3s`, `2d3h`. Shorter units are dropped as the duration grows, as kubectl's own ages are.
 */
export function humanDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms));
  if (total < 1000) return `${total}ms`;
  if (total < 60_000) {
    // One decimal: enough to tell 1.2 s from 1.8 s, where a run's time is spent.
    const seconds = Math.floor(total / 100) / 10;
    return `${Number.isInteger(seconds) ? seconds.toFixed(0) : seconds.toFixed(1)}s`;
  }
  const s = Math.floor(total / 1000);
  const [days, hours, minutes, seconds] = [
    Math.floor(s / 86_400),
    Math.floor(s / 3600) % 24,
    Math.floor(s / 60) % 60,
    s % 60,
  ];
  if (days > 0) return `${days}d${hours}h`;
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  return `${minutes}m${seconds}s`;
}
