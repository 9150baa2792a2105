/**
 * Kubernetes Events for the objects the operator reconciles (what `kubectl describe` shows): core v1
 * Events with the involved object, a reason declared for its kind in contract/reasons.ts (which also says
 * whether it is Normal or Warning) and a message. A repeat of the same event (object, type, reason,
 * message) increments the existing Event's count instead of adding one, as client-go's recorder does. Recording never fails the caller: a lost Event is only logged.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { type EventReasons, type EventType, eventType, type ReasonKind } from '../contract/reasons.ts';
import type { Condition, ObjectMeta } from '../contract/resources/meta.ts';
import { isResourceError, type ResourceClient } from '../kube/resources/index.ts';
import type { Event } from '../kube/types.ts';
import {
  conditionMessage,
  type DesiredCondition,
  findCondition,
  kubeTime,
  statusOf,
  truncateBytes,
} from './conditions.ts';

export const EVENT_SOURCE_COMPONENT = 'kubeglue-operator';
/** Event messages are cut to this many bytes (events.k8s.io caps notes at 1 KiB). */
export const EVENT_MESSAGE_LIMIT = 1024;
const EVENT_WRITE_ATTEMPTS = 3;

/** What an Event is about: an object of one of kubeglue's kinds. */
export interface InvolvedObject<K extends ReasonKind = ReasonKind> {
  apiVersion: string;
  kind: K;
  metadata: Pick<ObjectMeta, 'name' | 'namespace' | 'uid' | 'resourceVersion'>;
}

export type EventSink = Pick<ResourceClient<Event>, 'create' | 'patch'>;

export interface EventRecorderOptions {
  /** Where Events go; undefined: nowhere (the embedded deployment has no Events). */
  sink: EventSink | undefined;
  component?: string;
  /** reportingInstance / source.host. */
  instance?: string;
  log?: (line: string) => void;
  now?: () => Date;
  /** Recent Events remembered for counting repeats (default 4096). */
  cacheSize?: number;
}

export interface EventRecorder {
  /** Records an Event of the object's kind: Normal or Warning as the reason is declared. */
  record<K extends ReasonKind>(
    object: InvolvedObject<K>,
    reason: EventReasons[K],
    message: string,
  ): Promise<void>;
}

/** Discards every Event. */
export const NO_EVENTS: EventRecorder = { record: async () => {} };

interface Recent {
  name: string;
  count: number;
}

export function createEventRecorder(options: EventRecorderOptions): EventRecorder {
  const { sink } = options;
  if (!sink) return NO_EVENTS;
  const component = options.component ?? EVENT_SOURCE_COMPONENT;
  const instance = options.instance ?? hostname();
  const now = options.now ?? (() => new Date());
  const cacheSize = options.cacheSize ?? 4096;
  const recent = new Map<string, Recent>();

  const remember = (key: string, entry: Recent) => {
    recent.delete(key);
    recent.set(key, entry);
    if (recent.size > cacheSize) recent.delete(recent.keys().next().value as string);
  };

  const create = async (object: InvolvedObject, type: EventType, reason: string, message: string) => {
    const at = now();
    const name = `${object.metadata.name}.${at.getTime().toString(16)}${randomBytes(3).toString('hex')}`;
    const event: Event = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}) },
      involvedObject: {
        apiVersion: object.apiVersion,
        kind: object.kind,
        name: object.metadata.name,
        ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}),
        ...(object.metadata.uid ? { uid: object.metadata.uid } : {}),
        ...(object.metadata.resourceVersion ? { resourceVersion: object.metadata.resourceVersion } : {}),
      },
      reason,
      message,
      type,
      count: 1,
      firstTimestamp: kubeTime(at),
      lastTimestamp: kubeTime(at),
      source: { component, host: instance },
      reportingComponent: component,
      reportingInstance: instance,
    };
    await sink.create(event);
    return name;
  };

  return {
    async record(object, reason, rawMessage) {
      const type = eventType(object.kind, reason);
      const message = truncateBytes(rawMessage, EVENT_MESSAGE_LIMIT);
      const key = JSON.stringify([
        object.metadata.namespace,
        object.metadata.uid ?? object.metadata.name,
        type,
        reason,
        message,
      ]);
      const attempt = async () => {
        const seen = recent.get(key);
        if (seen) {
          try {
            await sink.patch(seen.name, { count: seen.count + 1, lastTimestamp: kubeTime(now()) });
            remember(key, { name: seen.name, count: seen.count + 1 });
            return;
          } catch (error) {
            // Expired (Events live about an hour) or removed: record a new one.
            if (!isResourceError(error, 'NotFound')) throw error;
          }
        }
        remember(key, { name: await create(object, type, reason, message), count: 1 });
      };
      for (let tries = 1; ; tries++) {
        try {
          await attempt();
          return;
        } catch (error) {
          // A busy API server may answer a write with a conflict; Events are worth one more try.
          if (isResourceError(error, 'Conflict') && tries < EVENT_WRITE_ATTEMPTS) continue;
          options.log?.(
            `event ${reason} for ${object.kind} ${object.metadata.name} not recorded: ${(error as Error).message}`,
          );
          return;
        }
      }
    },
  };
}

/** An Event to record: what changed, said once. */
export interface ConditionEvent<R> {
  reason: R;
  message: string;
}

/**
 * The Event a written change of a Ready-like condition deserves (the Tool and System controllers), from the
 * condition before the write and the one decided: its reason and message when it turns True or False, or
 * stays False for another reason or message (another problem). Its reasons are declared as Events too,
 * Normal for those of True and Warning for those of False. Nothing when it reads as before, so a resync,
 * which rewrites nothing, records nothing.
 */
export function conditionChangeEvent<D extends DesiredCondition>(
  before: readonly Condition[] | undefined,
  desired: D,
): ConditionEvent<D['reason']> | undefined {
  const previous = findCondition(before, desired.type);
  const status = statusOf(desired);
  const event = { reason: desired.reason, message: desired.message };
  if (status === 'True') return previous?.status === 'True' ? undefined : event;
  if (status !== 'False') return undefined;
  const same =
    previous?.status === 'False' &&
    previous.reason === desired.reason &&
    previous.message === conditionMessage(desired.message);
  return same ? undefined : event;
}
