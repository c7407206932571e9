// The daemons' modules leave `node:http`'s lazy web APIs unread: on Node 22 and later an ES
// module import of `node:http` loads the bundled undici (about 9 MiB resident) for its
// WebSocket, CloseEvent and MessageEvent exports, which no daemon uses (ts/node-builtins.ts).
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeBinary } from './support/node-binary.js';

const dist = join(import.meta.dirname, '..', 'dist');

/** Whether importing `what` in a fresh Node 24 process loads undici. */
function loadsUndici(what: string): boolean {
  const out = execFileSync(
    nodeBinary(24),
    [
      '--input-type=module',
      '-e',
      `await import(${JSON.stringify(what)});
       console.log(process.moduleLoadList.some((m) => m.includes('internal/deps/undici')));`,
    ],
    { encoding: 'utf8', timeout: 60_000 },
  );
  return out.trim() === 'true';
}

describe('node:http without undici', () => {
  it('an ES module import of node:http loads undici on Node 24 (what the check detects)', () => {
    expect(loadsUndici('node:http')).toBe(true);
  });

  it.each([
    ['the conntrack group (the reconciler)', 'cli/main-conntrack.js'],
    ['the ServiceCIDRs controller', 'cli/main-servicecidr-controller.js'],
    ['the whole CLI', 'cli/program.js'],
    ['the health and metrics listeners', 'kube/health.js'],
    ['the API transport', 'kube/rest.js'],
  ])('%s loads no undici', (_name, file) => {
    expect(loadsUndici(join(dist, file))).toBe(false);
  });
});
