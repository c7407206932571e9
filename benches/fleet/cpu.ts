import { readdirSync, readFileSync } from 'node:fs';

/** Nanoseconds of CPU every thread of `pid` has run (schedstat), kernel and user time alike. */
export function cpuNs(pid: number | undefined): number {
  if (!pid) return 0;
  let ns = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return ns;
}

/** Reads each process's CPU now; the function returned gives the ms each has run since. */
export function cpuSince(pids: (number | undefined)[]): () => number[] {
  const start = pids.map(cpuNs);
  return () => pids.map((p, i) => (cpuNs(p) - (start[i] ?? 0)) / 1e6);
}
