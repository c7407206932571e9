// What an embedding agent relies on: one error hierarchy, a public surface without test hooks,
// subsystems that import without the optional peers, and a package that imports (and a CLI
// that runs `doctor`) without a matching binary.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fromNative } from '../ts/errors.js';
import * as kubenode from '../ts/index.js';
import {
  bitmap,
  conntrack,
  KubenodeError,
  KubenodeRangeError,
  KubenodeTypeError,
  userns,
} from '../ts/index.js';

const root = path.resolve(import.meta.dirname, '..');

describe('error hierarchy', () => {
  it('every kind is a KubenodeError with a code, and still the built-in kind', () => {
    const t = new KubenodeTypeError('t');
    const r = new KubenodeRangeError('r');
    const b = new KubenodeError('ERR_KUBENODE_IO', 'b');
    expect(t).toBeInstanceOf(KubenodeError);
    expect(t).toBeInstanceOf(TypeError);
    expect(r).toBeInstanceOf(KubenodeError);
    expect(r).toBeInstanceOf(RangeError);
    expect(b).not.toBeInstanceOf(TypeError);
    expect([t.code, r.code, b.code]).toEqual([
      'ERR_KUBENODE_INVALID_ARG',
      'ERR_KUBENODE_OUT_OF_RANGE',
      'ERR_KUBENODE_IO',
    ]);
    expect(new Error('plain')).not.toBeInstanceOf(KubenodeError);
    expect(Object.assign(new TypeError('x'), { code: 'ERR_KUBENODE_INVALID_ARG' })).not.toBeInstanceOf(
      KubenodeError,
    );
    expect(kubenode.isKubenodeError(t) && kubenode.isKubenodeError(r) && kubenode.isKubenodeError(b)).toBe(
      true,
    );
  });

  it('subclasses keep their own instanceof', () => {
    const family = new conntrack.ConntrackFamilyError('f');
    const closed = new conntrack.ConntrackClosedError();
    expect(family).toBeInstanceOf(KubenodeError);
    expect(family).toBeInstanceOf(KubenodeTypeError);
    expect(closed).toBeInstanceOf(KubenodeError);
    expect(closed).not.toBeInstanceOf(conntrack.ConntrackPermissionError);
    expect(family).not.toBeInstanceOf(conntrack.ConntrackClosedError);
    expect(new userns.UsernsError('ERR_KUBENODE_IO', 'io', 'u')).toBeInstanceOf(KubenodeError);
  });

  it('errors from real calls are KubenodeErrors', () => {
    const errs: unknown[] = [];
    for (const f of [
      () => new bitmap.AllocationBitmap(-1, 'x'),
      () => new bitmap.AllocationBitmap('8' as never, 'x'),
      () => kubenode.sysctl.parseKernelVersion('not a version'),
      () => kubenode.servicecidr.parsePrefix('10.0.0.0/99'),
    ]) {
      try {
        f();
      } catch (e) {
        errs.push(e);
      }
    }
    expect(errs).toHaveLength(4);
    for (const e of errs) {
      expect(e).toBeInstanceOf(KubenodeError);
      expect((e as KubenodeError).code).toMatch(/^ERR_KUBENODE_/);
    }
  });

  it('a binding failure without a kubenode code becomes ERR_KUBENODE_INTERNAL, keeping the cause', () => {
    const raw = Object.assign(new Error('boom'), { code: 'GenericFailure' });
    const e = fromNative(raw) as KubenodeError;
    expect(e).toBeInstanceOf(KubenodeError);
    expect(e.code).toBe('ERR_KUBENODE_INTERNAL');
    expect(e.cause).toBe(raw);
  });
});

describe('public surface', () => {
  it('carries no test hooks', () => {
    const proto = Object.getOwnPropertyNames(conntrack.Conntrack.prototype);
    for (const hook of ['native', 'injectFaults', 'createEntries']) expect(proto).not.toContain(hook);
  });

  it('the release binary carries no native test hooks', () => {
    // The release binary as a fresh process loads it: this one may run the tests' build.
    const env = { ...process.env };
    delete env.KUBENODE_PREBUILD;
    const probe = `const b = require('node-gyp-build')(${JSON.stringify(root)});
      console.log(JSON.stringify(['injectFault', 'pinCostChoice'].filter((m) => m in b.Conntrack.prototype)))`;
    const r = spawnSync(process.execPath, ['-e', probe], { cwd: root, env, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual([]);
  });

  it('gives each meaning of "apply sysctls" its own name', () => {
    expect(typeof kubenode.sysctl.applySysctls).toBe('function');
    expect(typeof conntrack.applyConntrackSysctls).toBe('function');
    expect('applySysctls' in conntrack).toBe(false);
  });

  it('exports every subsystem as a subpath with types', () => {
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
      exports: Record<string, { types: string; default: string }>;
    };
    for (const sub of ['admission', 'bitmap', 'conntrack', 'servicecidr', 'sysctl', 'userns']) {
      const e = pkg.exports[`./${sub}`];
      if (!e) throw new Error(`no export for ./${sub}`);
      // dist/x.js comes from ts/x.ts: the source must exist for the subpath to be built.
      const src = e.default.replace(/^\.\/dist\//, 'ts/').replace(/\.js$/, '.ts');
      expect(() => readFileSync(path.join(root, src)), src).not.toThrow();
      expect(e.types).toBe(e.default.replace(/\.js$/, '.d.ts'));
    }
  });
});

// Runs `code` (an ES module) in a fresh Node with tsx, recording every module URL the ESM
// loader resolves and every CommonJS file loaded.
function loadedModules(code: string, cwd = root): string[] {
  const hook = `let port; export function initialize(d) { port = d.port; }
export async function resolve(s, c, next) { const r = await next(s, c); port.postMessage(r.url); return r; }`;
  const script = `
import { register, createRequire } from 'node:module';
import { MessageChannel } from 'node:worker_threads';
const seen = [];
const { port1, port2 } = new MessageChannel();
port1.on('message', (u) => seen.push(u));
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}), { data: { port: port2 }, transferList: [port2] });
${code}
await new Promise((r) => setTimeout(r, 100));
port1.close();
const cjs = Object.keys(createRequire(import.meta.url).cache);
process.stdout.write(JSON.stringify([...seen, ...cjs]));
`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd,
    encoding: 'utf8',
  });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout) as string[];
}

const PEERS = /@kubernetes[/\\]client-node|prom-client/;

describe('import graph', () => {
  for (const entry of ['sysctl/index', 'userns/index', 'bitmap', 'admission/index']) {
    it(`${entry} reaches neither client-node nor prom-client`, () => {
      const seen = loadedModules(`await import('./ts/${entry}.ts');`);
      expect(seen.some((u) => u.includes(`/ts/${entry}.ts`))).toBe(true);
      expect(seen.filter((u) => PEERS.test(u))).toEqual([]);
    });
  }

  it('the root and the daemon subsystems load the peers only when a daemon needs them', () => {
    const seen = loadedModules(`
      const k = await import('./ts/index.ts');
      if (k.conntrack.conntrackMetrics === undefined) throw new Error('no conntrack');
      if (globalThis.process.argv.length < 0) k.servicecidr.ServiceCIDRController;`);
    expect(seen.filter((u) => PEERS.test(u))).toEqual([]);
    const used = loadedModules(`
      const { conntrack } = await import('./ts/index.ts');
      const { Registry } = await import('prom-client');
      conntrack.conntrackMetrics(new Registry());`);
    expect(used.some((u) => /prom-client/.test(u))).toBe(true);
  });
});

describe('without a matching binary', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'kubenode-nobinary-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  // The sources alone: no build/ and no prebuilds/ next to them.
  cpSync(path.join(root, 'ts'), path.join(dir, 'ts'), { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), readFileSync(path.join(root, 'package.json')));
  symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));

  it('the package imports and the first call throws ERR_KUBENODE_BINDING_MISSING', () => {
    const r = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `const k = await import('./ts/index.ts');
         try { k.sysctl.isValidSysctlName('net.ipv4.ip_forward'); console.log('loaded'); }
         catch (e) { console.log(JSON.stringify({ kn: e instanceof k.KubenodeError, code: e.code, message: e.message })); }`,
      ],
      { cwd: dir, encoding: 'utf8' },
    );
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { kn: boolean; code: string; message: string };
    expect(out).toMatchObject({ kn: true, code: 'ERR_KUBENODE_BINDING_MISSING' });
    expect(out.message).toContain(`no kubenode binary for ${process.platform}-${process.arch}`);
  });

  it('kubenode doctor reports the binding missing and exits 1 (a usable pre-flight check)', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'ts/cli/main.ts', 'doctor', '-o', 'json'], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(1);
    const report = JSON.parse(r.stdout) as { sections: { section: string; checks: { status: string }[] }[] };
    const binding = report.sections.find((s) => s.section === 'binding');
    expect(binding?.checks[0]?.status).toBe('missing');
    expect(r.stderr).toBe('kubenode: doctor: unusable: binding: prebuilt binary is missing\n');
    const text = spawnSync(process.execPath, ['--import', 'tsx', 'ts/cli/main.ts', 'doctor'], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(text.status, text.stderr).toBe(1);
    expect(text.stdout).toMatch(/^binding:\n {2}- prebuilt binary: missing \(no kubenode binary/m);
  });
});
