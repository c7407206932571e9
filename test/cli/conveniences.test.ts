// `kubenode version`, `-o yaml`, `kubenode completion` and `kubenode doctor`'s exit code, on the
// real CLI process (completion in a real bash).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import YAML from 'yaml';

const root = join(import.meta.dirname, '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const main = join(root, 'ts', 'cli', 'main.ts');
vi.setConfig({ testTimeout: 120_000 });
const dir = mkdtempSync(join(tmpdir(), 'kubenode-cli-conv-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const kubenode = (...args: string[]) => spawnSync(tsx, [main, ...args], { encoding: 'utf8' });

describe('kubenode version', () => {
  it('prints the package version and the commit recorded at build time', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    // The build records the commit in dist/build-info.json, the installed CLI reads it.
    execFileSync(process.execPath, [join(root, 'scripts', 'build-info.mjs')], { cwd: root });
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const built = spawnSync(
      process.execPath,
      [join(root, 'dist', 'cli', 'main.js'), 'version', '-o', 'json'],
      {
        encoding: 'utf8',
      },
    );
    expect(built.status, built.stderr).toBe(0);
    expect(JSON.parse(built.stdout)).toMatchObject({
      version: pkg.version,
      gitCommit: head,
      gitTreeState: expect.stringMatching(/^(clean|dirty)$/),
      node: process.version,
    });
    const yaml = spawnSync(
      process.execPath,
      [join(root, 'dist', 'cli', 'main.js'), 'version', '-o', 'yaml'],
      {
        encoding: 'utf8',
      },
    );
    expect(YAML.parse(yaml.stdout)).toEqual(JSON.parse(built.stdout));
    // From the sources nothing is recorded, and it says so.
    const src = kubenode('version');
    expect(src.status, src.stderr).toBe(0);
    expect(src.stdout).toMatch(
      new RegExp(`^kubenode ${pkg.version.replaceAll('.', '\\.')} \\(commit unknown,`),
    );
  });
});

describe('-o yaml', () => {
  it('carries the same data as -o json', () => {
    const json = kubenode('sysctl', 'safe-list', '--kernel', '5.15', '-o', 'json');
    const yaml = kubenode('sysctl', 'safe-list', '--kernel', '5.15', '-o', 'yaml');
    expect(yaml.status, yaml.stderr).toBe(0);
    expect(YAML.parse(yaml.stdout)).toEqual(JSON.parse(json.stdout));
    const bad = kubenode('version', '-o', 'xml');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('want text, json or yaml');
  });
});

describe('kubenode completion', () => {
  it('bash: `kubenode con<TAB>` offers conntrack, `kubenode conntrack <TAB>` its subcommands', () => {
    const r = kubenode('completion', 'bash');
    expect(r.status, r.stderr).toBe(0);
    const script = join(dir, 'kubenode.bash');
    writeFileSync(script, r.stdout);
    const complete = (words: string[]) =>
      execFileSync(
        'bash',
        [
          '-c',
          `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _kubenode; printf '%s\\n' "\${COMPREPLY[@]}"`,
          'bash',
          script,
          ...words,
        ],
        { encoding: 'utf8' },
      )
        .split('\n')
        .filter((l) => l !== '');
    expect(complete(['kubenode', 'con'])).toEqual(['conntrack']);
    expect(complete(['kubenode', 'conntrack', ''])).toEqual([
      'list',
      'delete',
      'flush',
      'stats',
      'clean',
      'reconcile',
      '--help',
    ]);
    expect(complete(['kubenode', 'conntrack', 'list', '-f', 'ipv4', '--ne'])).toEqual(['--netns']);
    expect(complete(['kubenode', 'sysctl', 'policy', 're'])).toEqual(['render']);
  });

  it('zsh and fish scripts are generated; an unknown shell is bad input', () => {
    expect(kubenode('completion', 'zsh').stdout).toMatch(/^#compdef kubenode\n[\s\S]*bashcompinit/);
    expect(kubenode('completion', 'fish').stdout).toContain(
      "complete -c kubenode -n '__fish_use_subcommand' -a 'conntrack'",
    );
    const bad = kubenode('completion', 'tcsh');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('unknown shell "tcsh"');
  });
});
