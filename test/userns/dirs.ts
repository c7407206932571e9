// Temporary pods directories for the userns tests, removed after each test.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A fresh `<tmp>/<prefix>XXXXXX/pods`, removed after the test. */
export function podsDir(prefix = 'kubenode-userns-'): string {
  const d = mkdtempSync(path.join(tmpdir(), prefix));
  dirs.push(d);
  const pods = path.join(d, 'pods');
  mkdirSync(pods);
  return pods;
}
