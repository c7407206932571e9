// A counter of watch restarts read from an informer's own count at scrape time, so the
// informers need no metrics dependency.
import type { Registry } from 'prom-client';
import { promClient } from '../peers.js';

/** Registers counter `name` on `registry`; it follows `read()`, which only grows. */
export function restartCounter(registry: Registry, name: string, help: string, read: () => number): void {
  const { Counter } = promClient();
  let seen = 0;
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const now = read();
      if (now > seen) this.inc(now - seen);
      seen = Math.max(seen, now);
    },
  });
}
