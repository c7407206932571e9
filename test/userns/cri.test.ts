// The runtime-handler check against a real gRPC server speaking the CRI: benches/peers/cmd/
// fake-cri serves k8s.io/cri-api's generated RuntimeService (no containerd or CRI-O here), with
// handlers with and without user-namespace support.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userns } from '../../ts/index.js';

const root = join(import.meta.dirname, '..', '..');
const main = join(root, 'ts', 'cli', 'main.ts');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const bin = join(root, '.cache', 'fake-cri', 'fake-cri');
const dir = mkdtempSync(join(tmpdir(), 'kubenode-cri-'));
const socket = join(dir, 'cri.sock');
let server: ChildProcess | undefined;

beforeAll(async () => {
  if (!existsSync(bin)) {
    mkdirSync(join(root, '.cache', 'fake-cri'), { recursive: true });
    const b = spawnSync('go', ['build', '-o', bin, './cmd/fake-cri'], {
      cwd: join(root, 'benches', 'peers'),
      encoding: 'utf8',
    });
    if (b.status !== 0) throw new Error(`go build fake-cri: ${b.stderr}`);
  }
  server = spawn(bin, [
    '--socket',
    socket,
    '--handler',
    '=userns',
    '--handler',
    'runc=userns',
    '--handler',
    'kata',
  ]);
  await new Promise<void>((resolve, reject) => {
    server?.stdout?.once('data', () => resolve());
    server?.once('exit', (c) => reject(new Error(`fake-cri exited ${c}`)));
  });
}, 300_000);

afterAll(() => {
  server?.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

function doctorCheck(args: string[]) {
  const r = spawnSync(tsx, [main, 'doctor', '--cri-socket', `unix://${socket}`, ...args, '-o', 'json'], {
    encoding: 'utf8',
  });
  expect(r.status, r.stderr).toBe(0);
  const s = (
    JSON.parse(r.stdout) as { sections: { section: string; checks: { name: string }[] }[] }
  ).sections.find((x) => x.section === 'user namespaces');
  return s?.checks.find((c) => c.name.startsWith('runtime handler'));
}

describe('runtime handler user-namespace support (CRI Status over gRPC)', () => {
  it('reads every handler and its user_namespaces feature', async () => {
    expect(await userns.runtimeHandlers(`unix://${socket}`)).toEqual([
      { name: '', userNamespaces: true },
      { name: 'runc', userNamespaces: true },
      { name: 'kata', userNamespaces: false },
    ]);
    await expect(userns.runtimeHandlers(join(dir, 'absent.sock'))).rejects.toMatchObject({
      code: 'ERR_KUBENODE_IO',
      message: expect.stringMatching(/^CRI .*absent\.sock: /),
    });
  });

  it('kubenode doctor judges the handler as the kubelet does', () => {
    expect(doctorCheck([])).toEqual({
      name: 'runtime handler ""',
      status: 'ok',
      value: 'supports user namespaces',
    });
    expect(doctorCheck(['--runtime-handler', 'runc'])).toMatchObject({ status: 'ok' });
    expect(doctorCheck(['--runtime-handler', 'kata'])).toEqual({
      name: 'runtime handler "kata"',
      status: 'missing',
      value: 'no user namespaces',
      detail:
        'can\'t set `spec.hostUsers: false`, RuntimeClass handler "kata" does not support user namespaces',
    });
    expect(doctorCheck(['--runtime-handler', 'gvisor'])).toMatchObject({
      status: 'missing',
      detail: 'the handler "gvisor" is not known',
    });
  }, 60_000);

  it('decodes a StatusResponse by field number, skipping what it does not know', () => {
    // status=1 (empty), info=2 {"k":"v"}, runtime_handlers=3 {name="x", features={rro=1, userns=1}}.
    const msg = Uint8Array.from([
      0x0a, 0x00, 0x12, 0x06, 0x0a, 0x01, 0x6b, 0x12, 0x01, 0x76, 0x1a, 0x07, 0x0a, 0x01, 0x78, 0x12, 0x02,
      0x08, 0x01, 0x1a, 0x02, 0x10, 0x01,
    ]);
    expect(() => userns.decodeRuntimeHandlers(msg)).not.toThrow();
    const ok = Uint8Array.from([0x1a, 0x07, 0x0a, 0x01, 0x78, 0x12, 0x02, 0x10, 0x01]);
    expect(userns.decodeRuntimeHandlers(ok)).toEqual([{ name: 'x', userNamespaces: true }]);
    expect(() => userns.decodeRuntimeHandlers(Uint8Array.from([0x1a, 0x09, 0x0a]))).toThrow(/truncated/);
  });
});
