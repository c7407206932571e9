import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { userns } from '../../ts/index.js';

const root = path.resolve(import.meta.dirname, '../..');
const base = mkdtempSync(path.join(tmpdir(), 'kubenode-userns-cli-'));
const podsDir = path.join(base, 'pods');
mkdirSync(podsDir);
afterAll(() => rmSync(base, { recursive: true, force: true }));

function cli(...args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'ts/cli/main.ts', ...args], {
    cwd: root,
    encoding: 'utf8',
  });
}

describe('kernel check and CLI', () => {
  it('uid 0 inside a new user namespace is the pod hostId outside', async () => {
    if (process.getuid?.() !== 0) throw new Error('this test needs root (CI runs as root)');
    const m = await userns.UserNsManager.create({ podsDir, seed: 11 });
    const ns = await m.getOrCreateUserNamespaceMappings({
      metadata: { uid: 'pod-v' },
      spec: { hostUsers: false },
    });
    m.close();
    const hostId = ns?.uids[0]?.hostId ?? -1;
    const r = await userns.verifyMapping(podsDir, 'pod-v');
    expect(r).toMatchObject({
      insideUid: 0,
      insideGid: 0,
      outsideUid: hostId,
      outsideGid: hostId,
      fileUid: hostId,
      ok: true,
    });
    expect(r.uidMap).toBe(`0 ${hostId} 65536`);
    // The last range of upstream's default pool holds 4294967295: the kernel refuses it.
    await expect(userns.verifyRange(2 ** 32 - 65536, 65536)).rejects.toThrow(/uid_map: invalid argument/);

    const v = cli('userns', 'verify', podsDir, 'pod-v', '-o', 'json');
    expect(v.status).toBe(0);
    expect(JSON.parse(v.stdout)).toMatchObject({ ok: true, outsideUid: hostId });
    const ls = cli('userns', 'ls', podsDir, '-o', 'json');
    expect(JSON.parse(ls.stdout)).toEqual([{ pod: 'pod-v', hostId, length: 65536, error: null }]);
    const text = cli('userns', 'ls', podsDir);
    expect(text.stdout).toMatch(new RegExp(`^POD\\s+FIRST ID\\s+LENGTH\\npod-v\\s+${hostId}\\s+65536\\n$`));
    expect(cli('userns', 'verify', podsDir, '../etc').status).toBe(1);
    const doctor = JSON.parse(cli('doctor', '-o', 'json').stdout) as {
      sections: Array<{ section: string; checks: Array<{ name: string; value: unknown }> }>;
    };
    const pool = doctor.sections.find((s) => s.section === 'user namespace pool');
    expect(pool?.checks.find((c) => c.name === 'pods that fit')?.value).toBeTypeOf('number');
    execFileSync('true');
  }, 60_000);
});
