// A peer that is missing, or installed at a version that does not load on the running Node, is
// a typed error naming the version that fits, loaded from a real node_modules tree.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubenodeError } from '../ts/errors.js';
import { loadPeer, peerSpec, promClient } from '../ts/peers.js';

const CN = '@kubernetes/client-node';
let dir: string;
let req: NodeJS.Require;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'kubenode-peers-'));
  // client-node 2.x as it fails on Node 20: its undici reads zlib's zstd, absent there.
  const pkg = join(dir, 'node_modules', CN);
  mkdirSync(pkg, { recursive: true });
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: CN, version: '2.0.1', main: 'index.js' }));
  writeFileSync(
    join(pkg, 'index.js'),
    'throw new TypeError("Cannot read properties of undefined (reading \'bind\')");\n',
  );
  writeFileSync(join(dir, 'app.js'), '');
  req = createRequire(join(dir, 'app.js'));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('peer dependencies', () => {
  it('the version that fits each supported Node', () => {
    expect(peerSpec(CN, 'v20.19.0')).toBe(`${CN}@^1.4`);
    expect(peerSpec(CN, 'v22.12.0')).toBe(`'${CN}@^1.4 || ^2'`);
    expect(peerSpec(CN, 'v24.11.0')).toBe(`'${CN}@^1.4 || ^2'`);
    expect(peerSpec('prom-client', 'v20.19.0')).toBe('prom-client@^15');
  });

  it('an installed version that does not load says so and which one fits', () => {
    let e: unknown;
    try {
      loadPeer(CN, 'this Kubernetes API client', req, 'v20.19.0');
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(KubenodeError);
    expect(e).toMatchObject({ code: 'ERR_KUBENODE_UNSUPPORTED' });
    expect((e as Error).message).toBe(
      `this Kubernetes API client needs the peer dependency ${CN}, but ${CN} 2.0.1 does not load on Node v20.19.0; install a version that does: npm install ${CN}@^1.4 (Cannot read properties of undefined (reading 'bind'))`,
    );
  });

  it('a missing peer says to install it, at the version that fits', () => {
    expect(() => loadPeer('prom-client', 'recording metrics', req, 'v24.11.0')).toThrow(
      /^recording metrics needs the peer dependency prom-client; install it next to kubenode: npm install prom-client@\^15 \(Cannot find module 'prom-client'/,
    );
  });

  it("prom-client's classes come from its own modules, the same ones its index exports", () => {
    const index = createRequire(import.meta.url)('prom-client') as typeof import('prom-client');
    const lean = promClient();
    expect(lean.Registry).toBe(index.Registry);
    expect(lean.Counter).toBe(index.Counter);
    expect(lean.Gauge).toBe(index.Gauge);
    expect(lean.Histogram).toBe(index.Histogram);
  });
});
