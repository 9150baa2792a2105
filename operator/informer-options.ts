/** What a controller's options say about its informers. */
export interface InformerSettings {
  /** Relist period of the informers; their default when unset. */
  resyncMs?: number;
  log?: (line: string) => void;
}

/** The options a controller passes on to its informers: only what is set. */
export function informerOptions(settings: InformerSettings): InformerSettings {
  return {
    ...(settings.resyncMs ? { resyncMs: settings.resyncMs } : {}),
    ...(settings.log ? { log: settings.log } : {}),
  };
}
