// The timing rule of kube-proxy's BoundedFrequencyRunner (pkg/proxy/runner), as pure
// functions of a clock reading, so the rule is tested with a fake clock and used with a
// real one.

/** What the next start depends on; all times on one clock, in ms. */
export interface RunTimes {
  /** When the last run ended; undefined before the first run. */
  lastEnd: number | undefined;
  /** When a run was first asked for since the last run started; undefined when none is. */
  requestedAt: number | undefined;
  /** When a run is due without being asked for (periodic or retry); Infinity when never. */
  dueAt: number;
}

/**
 * When the next run starts: as soon as it is asked for or due, but never sooner than
 * `minIntervalMs` after the end of the last run. A request after a quiet period longer than
 * that runs at once; requests within it are coalesced into one run when it is over. Infinity
 * when nothing asks for or owes a run.
 */
export function nextRunAt(t: RunTimes, minIntervalMs: number): number {
  const wanted = Math.min(t.requestedAt ?? Number.POSITIVE_INFINITY, t.dueAt);
  return t.lastEnd === undefined ? wanted : Math.max(wanted, t.lastEnd + minIntervalMs);
}

/** The periodic bounds of a runner. */
export interface RunPeriods {
  /** A failed run is run again this long after it ended (unless something runs it sooner). */
  retryIntervalMs: number;
  /** A run happens at least this long after the last one ended. */
  maxIntervalMs: number;
}

/**
 * When a run is due without a request: `maxIntervalMs` after the last run ended (after the
 * loop started, before the first run), or `retryIntervalMs` after it when it failed, whichever
 * is sooner. Any later run, failed or not, replaces the deadline of the one before it.
 */
export function periodicDueAt(
  loopStart: number,
  last: { end: number; failed: boolean } | undefined,
  p: RunPeriods,
): number {
  if (last === undefined) return loopStart + p.maxIntervalMs;
  return last.end + (last.failed ? Math.min(p.retryIntervalMs, p.maxIntervalMs) : p.maxIntervalMs);
}
