/**
 * The kinds of value a setting holds, each parsing the variable's text: declared once for every setting.
 */
import { resolve } from 'node:path';
import { z } from 'zod';
import { networkRuleProblem } from '../contract/api/system.ts';

export const positiveInt = z.coerce.number().int().positive().meta({ kind: 'integer ≥ 1' });
export const nonNegativeInt = z.coerce.number().int().min(0).meta({ kind: 'integer ≥ 0' });
export const port = z.coerce.number().int().min(0).max(65_535).meta({ kind: 'port' });
export const text = z.string().min(1).meta({ kind: 'text' });
/** A path, resolved against the working directory at start. */
export const path = text.transform((value) => resolve(value)).meta({ kind: 'path' });
export const bool = z
  .enum(['true', 'false'], { error: "must be 'true' or 'false'" })
  .transform((value) => value === 'true')
  .meta({ kind: '`true` or `false`' });

const DURATION_UNITS_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A duration such as `30d`, `12h`, `90m`, `45s`, `500ms`, or `0` (off); in milliseconds. */
export const duration = z
  .string()
  .trim()
  .regex(/^(0|\d+(ms|s|m|h|d))$/, 'a duration such as 30d, 12h, 90m, 45s or 500ms, or 0 for off')
  .transform((value) => {
    const match = /^(\d+)(ms|s|m|h|d)?$/.exec(value);
    const unit = (match?.[2] ?? 'ms') as keyof typeof DURATION_UNITS_MS;
    return Number(match?.[1] ?? 0) * DURATION_UNITS_MS[unit];
  })
  .meta({ kind: 'duration (`ms`, `s`, `m`, `h`, `d`)' });

/** Comma-separated, entries trimmed, empty ones dropped. */
export const list = z
  .string()
  .transform((value) =>
    value
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean),
  )
  .meta({ kind: 'comma-separated list' });

/** Comma-separated milliseconds. */
export const millisecondsList = z
  .string()
  .regex(/^\d+(,\d+)*$/, 'a comma-separated list of milliseconds')
  .transform((value) => value.split(',').map(Number))
  .meta({ kind: 'comma-separated milliseconds' });

/** A Kubernetes quantity such as `100m`, `1`, `256Mi`, `1.5Gi`. */
export const quantity = z
  .string()
  .regex(/^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/, 'must be a Kubernetes quantity like 256Mi')
  .meta({ kind: 'Kubernetes quantity' });

/** An http(s) base URL, without trailing slashes (browsers follow links made from it). */
export const baseUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
  .transform((value) => value.replace(/\/+$/, ''))
  .meta({ kind: 'URL' });

/** Whether `value` is `host:port` or `[v6]:port`. */
function isHostPort(value: string): boolean {
  const colon = value.lastIndexOf(':');
  const portNumber = Number(value.slice(colon + 1));
  const host = value.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  return colon > 0 && host !== '' && Number.isInteger(portNumber) && portNumber >= 1 && portNumber <= 65535;
}

const HOST_PORT = 'must be host:port ([v6]:port for IPv6)';
/** `host:port` or `[v6]:port`. */
export const hostPort = z.string().refine(isHostPort, HOST_PORT).meta({ kind: 'host:port' });
/** The same, or empty (unset). */
export const hostPortOrEmpty = z
  .string()
  .refine((value) => value === '' || isHostPort(value), HOST_PORT)
  .meta({ kind: 'host:port' });

/** Egress rules (CIDRs, IPs, host names, `*.suffix`, socket paths), comma-separated; the first bad one is named. */
export const egressRules = list
  .superRefine((entries, context) => {
    for (const entry of entries) {
      const problem = networkRuleProblem(entry);
      if (problem) {
        context.addIssue({ code: 'custom', message: problem });
        return;
      }
    }
  })
  .meta({ kind: 'comma-separated egress rules' });

export const egressPrivate = z.enum(['allow', 'deny'], { error: "must be 'allow' or 'deny'" });
