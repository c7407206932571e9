// The TS sources under a directory (recursively), declaration files excluded.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

export function tsSources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return tsSources(p);
    return p.endsWith('.ts') && !p.endsWith('.d.ts') ? [p] : [];
  });
}
