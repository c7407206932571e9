// The contract scripts rely on, checked on the real `kubenode` process: exit codes (0 success,
// 1 rejected or failed, 2 usage error or bad input) for every subcommand, --version, a closed
// stdout, escaped control characters, non-mapping and oversized pod files.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const main = join(root, 'ts', 'cli', 'main.ts');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
// Each run starts tsx: 1–4 s on a busy 2-core machine.
vi.setConfig({ testTimeout: 240_000 });

const dir = mkdtempSync(join(tmpdir(), 'kubenode-cli-contract-'));
const netns = `kubenode-cli-contract-${process.pid}`;
beforeAll(() => {
  const r = spawnSync('ip', ['netns', 'add', netns], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip netns add: ${r.stderr}`);
});
afterAll(() => {
  spawnSync('ip', ['netns', 'del', netns]);
  rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

function run(args: string[], opts: { input?: string; closeStdout?: boolean } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(tsx, [main, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    // The reader goes away before the command writes anything: its writes meet EPIPE.
    if (opts.closeStdout) child.stdout.destroy();
    else child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, ms: performance.now() - start }));
  });
}

/** Runs the cases a few at a time: the machine is shared and each tsx start costs a core. */
async function runAll(cases: string[][]): Promise<Run[]> {
  const results: Run[] = [];
  for (let i = 0; i < cases.length; i += 4) {
    results.push(...(await Promise.all(cases.slice(i, i + 4).map((args) => run(args)))));
  }
  return results;
}

function file(name: string, content: string | Buffer): string {
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
}

const STACK = /^\s+at /m;

describe('exit codes', () => {
  it('every usage error of every (sub)command exits 2 with a message and no stack trace', async () => {
    const pod = file('ok.yaml', 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n');
    const cases: string[][] = [
      [],
      ['--bogus'],
      ['bogus'],
      ['admit'],
      ['admit', '--bogus', pod],
      ['admit', pod, 'extra'],
      ['admit', pod, '--kernel'],
      ['admit', pod, '-o', 'xml'],
      ['sysctl'],
      ['sysctl', 'bogus'],
      ['sysctl', 'safe-list', '--kernel'],
      ['sysctl', 'safe-list', '--bogus'],
      ['sysctl', 'probe', '--bogus'],
      ['doctor', '--bogus'],
      ['doctor', 'extra'],
      ['conntrack'],
      ['conntrack', 'bogus'],
      ['conntrack', 'list', '--bogus'],
      ['conntrack', 'list', '--family', 'ipv5'],
      ['conntrack', 'stats', '--bogus'],
      ['conntrack', 'stats', '-o', 'xml'],
      ['conntrack', 'clean'],
      ['conntrack', 'clean', '--services', pod],
      ['conntrack', 'reconcile'],
      ['conntrack', 'reconcile', '--bogus'],
      ['servicecidr-controller', '--bogus'],
      ['servicecidr-controller', '--workers'],
      ['userns'],
      ['userns', 'ls'],
      ['userns', 'verify', dir],
      ['userns', 'ls', dir, '--bogus'],
    ];
    const results = await runAll(cases);
    results.forEach((r, i) => {
      const what = `kubenode ${cases[i]?.join(' ')}: ${r.stderr}`;
      expect(r.code, what).toBe(2);
      expect(r.stderr, what).toMatch(/error:|kubenode/);
      expect(r.stderr, what).not.toMatch(STACK);
    });
  });

  it('help exits 0', async () => {
    for (const args of [
      ['--help'],
      ['admit', '--help'],
      ['conntrack', 'clean', '--help'],
      ['help', 'sysctl'],
    ]) {
      const r = await run(args);
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stdout).toMatch(/^Usage: kubenode/);
    }
  });

  it('--version prints the package version and exits 0', async () => {
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const r = await run([flag]);
      expect(r).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: '' });
    }
  });
});

describe('closed stdout', () => {
  it('ends quietly, with the exit code of the command and no EPIPE trace', async () => {
    const cases = [
      ['sysctl', 'safe-list', '--kernel', '6.1'],
      ['conntrack', 'list', '--netns', `/var/run/netns/${netns}`, '-o', 'json'],
      ['--help'],
    ];
    for (const args of cases) {
      const r = await run(args, { closeStdout: true });
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      expect(r.stderr).not.toMatch(/EPIPE|Error/);
    }
  });

  it('the real pipe: `kubenode sysctl safe-list | head -1`', () => {
    const r = spawnSync(
      'bash',
      ['-o', 'pipefail', '-c', `'${tsx}' '${main}' sysctl safe-list --kernel 6.1 | head -1`],
      {
        encoding: 'utf8',
      },
    );
    expect(r.stdout).toBe('kernel.shm_rmid_forced\n');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});

describe('control characters from input are escaped', () => {
  const ESC = '\x1b';
  it('in file names, paths, option values and commander errors', async () => {
    const cases = [
      ['admit', join(dir, `missing-${ESC}[31m.yaml`)],
      ['userns', 'ls', join(dir, `no-${ESC}]0;title\x07dir`)],
      ['conntrack', 'list', '--netns', join(dir, `ns-${ESC}[2J`)],
      ['admit', `--${ESC}[31mbogus`],
      ['sysctl', 'safe-list', '--kernel', `6.${ESC}[31m1\x9b2J`],
    ];
    const results = await runAll(cases);
    results.forEach((r, i) => {
      const what = `${JSON.stringify(cases[i])}: ${JSON.stringify(r.stderr)}`;
      // biome-ignore lint/suspicious/noControlCharactersInRegex: the raw control characters must not appear
      expect(r.stdout + r.stderr, what).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
      expect(r.stdout + r.stderr, what).toMatch(/\\x1b|\\u001b/);
    });
  });

  it('no CLI module writes to stdout or stderr except through the output layer', () => {
    const cliDir = join(root, 'ts', 'cli');
    for (const f of readdirSync(cliDir).filter((n) => n.endsWith('.ts') && n !== 'output.ts')) {
      const src = readFileSync(join(cliDir, f), 'utf8');
      expect(src, f).not.toMatch(/process\.(stdout|stderr)\.write|console\./);
    }
  });
});

describe('admit input', () => {
  it('a YAML document that is not a mapping is bad input (exit 2), never ADMIT', async () => {
    const cases = ['!!binary aGVsbG8=\n', '42\n', '- a\n- b\n', '!!set { a, b }\n', '"pod"\n', '[1, 2]\n'];
    const results = await runAll(
      cases.map((c, i) => ['admit', file(`scalar-${i}.yaml`, c), '--kernel', '6.1']),
    );
    results.forEach((r, i) => {
      expect(r.code, cases[i]).toBe(2);
      expect(r.stdout, cases[i]).toBe('');
      expect(r.stderr, cases[i]).toMatch(/not a Pod object/);
    });
  });

  it('a duplicate YAML key is malformed input, as for go-yaml', async () => {
    const pod = file('dup.yaml', 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\n');
    const r = await run(['admit', pod, '--kernel', '6.1']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('mapping key "name" already defined');
  });

  const podWithAnnotations = (bytes: number) => {
    let s = 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n';
    for (let i = 0; s.length < bytes; i++) s += `    key-${i}.example.com/x: "value-${i}-abcdefghijklmnop"\n`;
    return `${s}spec:\n  securityContext:\n    sysctls:\n    - name: net.core.somaxconn\n      value: "1"\n`;
  };

  it('refuses a pod larger than the API server accepts (3 MiB), from a file or stdin', async () => {
    const big = podWithAnnotations(3 * 1024 * 1024 + 1);
    const f = await run(['admit', file('big.yaml', big), '--kernel', '6.1']);
    expect(f.code, f.stderr).toBe(2);
    expect(f.stderr).toContain('Request entity too large: limit is 3145728');
    expect(f.stdout).toBe('');
    const s = await run(['admit', '-', '--kernel', '6.1'], { input: big });
    expect(s.code, s.stderr).toBe(2);
    expect(s.stderr).toContain('Request entity too large: limit is 3145728');
  });

  it('refuses a conntrack table that never ends (/dev/zero) instead of reading it until memory runs out', async () => {
    const eps = file('eps.json', '{}');
    const r = await run(['conntrack', 'clean', '--services', '/dev/zero', '--endpoints', eps]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(
      'services file /dev/zero: Request entity too large: limit is 268435456 (the largest table kubenode reads)',
    );
    expect(r.stderr).not.toMatch(STACK);
  });

  it('a pod just under the limit with 50,000 annotation keys is judged quickly', async () => {
    const r = await run(['admit', file('large.yaml', podWithAnnotations(3_000_000)), '--kernel', '6.1']);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toBe('REJECT SysctlForbidden: forbidden sysctl: "net.core.somaxconn" not allowlisted\n');
    // Generous for a loaded CI machine; the quadratic duplicate-key check took minutes.
    expect(r.ms).toBeLessThan(30_000);
  });
});
