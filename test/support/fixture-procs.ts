// Bookkeeping for the servers the API-server fixture starts, so none outlives its test run even
// when the vitest worker dies by a signal (no `exit` hook runs then). Each server is spawned in
// its own process group and recorded in a pidfile with its start time and the start time of the
// process that spawned it (the owner). `sweepOrphans` kills only groups whose recorded process is
// still the same one (pid and start time match) and whose owner is gone: servers of live test
// runs — other people's included — are never touched.
import { mkdirSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const PIDFILE_DIR = join(tmpdir(), 'kubenode-fixture-pids');

interface Record {
  pid: number;
  start: string;
  owner: number;
  ownerStart: string;
  /** The fixture's temp dir, removed with the orphan (unless logs are kept). */
  dir: string;
}

/** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); undefined if gone. */
export function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces and parentheses: fields follow the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function file(pid: number): string {
  return join(PIDFILE_DIR, `${pid}.json`);
}

export function recordProcess(pid: number, dir: string): void {
  const start = startTime(pid);
  const ownerStart = startTime(process.pid);
  if (start === undefined || ownerStart === undefined) return;
  mkdirSync(PIDFILE_DIR, { recursive: true });
  const r: Record = { pid, start, owner: process.pid, ownerStart, dir };
  writeFileSync(file(pid), JSON.stringify(r));
}

export function forgetProcess(pid: number): void {
  try {
    unlinkSync(file(pid));
  } catch {
    // already gone
  }
}

/** Kills the process group led by `pid` (spawned with `detached: true`). */
export function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is gone
  }
}

/** Kills fixture servers whose owner process is gone; returns the pids killed. */
export function sweepOrphans(): number[] {
  let names: string[];
  try {
    names = readdirSync(PIDFILE_DIR);
  } catch {
    return [];
  }
  const killed: number[] = [];
  for (const name of names) {
    const path = join(PIDFILE_DIR, name);
    let r: Record;
    try {
      r = JSON.parse(readFileSync(path, 'utf8')) as Record;
    } catch {
      continue;
    }
    if (!Number.isInteger(r.pid) || r.pid <= 1 || !Number.isInteger(r.owner)) continue;
    if (startTime(r.owner) === r.ownerStart) continue; // its test run is still going
    if (startTime(r.pid) === r.start) {
      killGroup(r.pid, 'SIGKILL');
      killed.push(r.pid);
    }
    if (!process.env.KUBENODE_APISERVER_LOGS && r.dir.includes('kubenode-apiserver-')) {
      rmSync(r.dir, { recursive: true, force: true });
    }
    rmSync(path, { force: true });
  }
  return killed;
}
