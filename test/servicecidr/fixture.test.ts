// The API-server fixture cleans up after itself: a failed certificate step leaves no temp dir,
// and servers whose test process died by SIGKILL (no exit hook) are swept by the globalSetup.
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startApiServer } from '../support/apiserver.js';
import { PIDFILE_DIR, startTime, sweepOrphans } from '../support/fixture-procs.js';

const repo = resolve(import.meta.dirname, '..', '..');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

describe('API server fixture hygiene', () => {
  it('removes its temp dir when openssl fails', async () => {
    const root = mkdtempSync(join(tmpdir(), 'kubenode-fixture-test-'));
    const saved = { PATH: process.env.PATH, TMPDIR: process.env.TMPDIR };
    try {
      const fake = join(root, 'bin');
      const tmp = join(root, 'tmp');
      mkdirSync(fake);
      mkdirSync(tmp);
      writeFileSync(join(fake, 'openssl'), '#!/bin/sh\nexit 1\n');
      chmodSync(join(fake, 'openssl'), 0o755);
      process.env.PATH = `${fake}:${saved.PATH}`;
      process.env.TMPDIR = tmp;
      await expect(startApiServer()).rejects.toThrow(/could not prepare the test API server's certificates/);
      expect(readdirSync(tmp)).toEqual([]);
    } finally {
      process.env.PATH = saved.PATH;
      if (saved.TMPDIR === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved.TMPDIR;
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('sweeps etcd and kube-apiserver left by a SIGKILLed test process, and only those', async () => {
    const script = join(mkdtempSync(join(tmpdir(), 'kubenode-fixture-test-')), 'owner.mts');
    writeFileSync(
      script,
      `import { startApiServer } from ${JSON.stringify(join(repo, 'test/support/apiserver.ts'))};\n` +
        'const api = await startApiServer();\n' +
        'console.log(JSON.stringify({ dir: api.dir }));\n' +
        'setInterval(() => {}, 1e6);\n',
    );
    const owner = spawn(join(repo, 'node_modules/.bin/tsx'), [script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const line = await new Promise<string>((res, rej) => {
        let buf = '';
        owner.stdout?.on('data', (c) => {
          buf += c;
          const nl = buf.indexOf('\n');
          if (nl >= 0) res(buf.slice(0, nl));
        });
        owner.once('exit', (code) => rej(new Error(`owner exited (${code}) before the server was up`)));
      });
      const { dir } = JSON.parse(line) as { dir: string };
      // tsx runs the script in a child of its own: the owner recorded is that process.
      const records = readdirSync(PIDFILE_DIR)
        .map(
          (f) =>
            JSON.parse(readFileSync(join(PIDFILE_DIR, f), 'utf8')) as {
              pid: number;
              owner: number;
              dir: string;
            },
        )
        .filter((r) => r.dir === dir);
      expect(records).toHaveLength(2); // etcd and kube-apiserver
      const ownerPid = records[0]?.owner as number;
      expect(startTime(ownerPid)).toBeDefined();
      // While the owner lives, a sweep leaves its servers alone.
      sweepOrphans();
      for (const r of records) expect(alive(r.pid)).toBe(true);

      process.kill(ownerPid, 'SIGKILL'); // no exit hook runs
      await new Promise((r) => setTimeout(r, 300));
      for (const r of records) expect(alive(r.pid)).toBe(true); // orphaned, still running

      const killed = sweepOrphans();
      expect(killed.sort()).toEqual(expect.arrayContaining(records.map((r) => r.pid).sort()));
      await new Promise((r) => setTimeout(r, 300));
      for (const r of records) expect(alive(r.pid)).toBe(false);
      expect(readdirSync(tmpdir())).not.toContain(dir.split('/').pop());
    } finally {
      owner.kill('SIGKILL');
      rmSync(resolve(script, '..'), { recursive: true, force: true });
    }
  }, 180_000);
});
