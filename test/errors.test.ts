// One error shape across the boundary: every code and kind the binding can report maps to its
// intended class, thrown errors carry the same fields as task outcomes, and the CLI tells a
// bad --kernel from a bad --kubernetes-version by kind, not by message text.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ERROR_CLASSES,
  type KubenodeErrorCode as ErrorCode,
  type KubenodeErrorKind as ErrorKind,
  type ErrorScope,
  fromNative,
} from '../ts/errors.js';
import {
  bitmap,
  conntrack,
  KubenodeError,
  KubenodeRangeError,
  KubenodeTypeError,
  servicecidr,
  sysctl,
  userns,
} from '../ts/index.js';
import { native } from '../ts/native.js';

// The generated string enums are also runtime objects on the binding (non-enumerable members).
function enumValues<T extends string>(name: string): T[] {
  const o = (native as unknown as Record<string, Record<string, T>>)[name] ?? {};
  return Object.getOwnPropertyNames(o).map((k) => o[k] as T);
}
const CODES = enumValues<ErrorCode>('ErrorCode');
const KINDS = enumValues<ErrorKind>('ErrorKind');
const SCOPES = enumValues<ErrorScope>('ErrorScope');

const USERNS_KINDS: ErrorKind[] = [
  'config',
  'parse',
  'conflict',
  'exhausted',
  'locked',
  'invalid-pod-uid',
  'io',
  'permission',
  'unsupported',
];

/** The intended class: the subsystem's where it has one for the kind, else the code's. */
function expected(
  code: ErrorCode,
  kind: ErrorKind,
  scope: ErrorScope | undefined,
): abstract new (
  ...a: never[]
) => Error {
  if (scope === 'userns' && USERNS_KINDS.includes(kind)) return userns.UsernsError;
  if (scope === 'conntrack') {
    if (kind === 'family') return conntrack.ConntrackFamilyError;
    if (kind === 'closed') return conntrack.ConntrackClosedError;
    if (kind === 'permission') return conntrack.ConntrackPermissionError;
    if (kind === 'unavailable' || kind === 'unsupported') return conntrack.ConntrackUnavailableError;
  }
  if (code === 'ERR_KUBENODE_INVALID_ARG') return KubenodeTypeError;
  if (code === 'ERR_KUBENODE_OUT_OF_RANGE') return KubenodeRangeError;
  return KubenodeError;
}

describe('fromNative maps every generated code and kind', () => {
  it('reads the enums from the binding', () => {
    expect(CODES).toContain('ERR_KUBENODE_INVALID_ARG');
    expect(KINDS).toContain('invalid-pod-uid');
    expect(SCOPES).toEqual(expect.arrayContaining(['conntrack', 'sysctl', 'userns']));
  });

  it('has a row for every kind the binding can report', () => {
    expect(Object.keys(ERROR_CLASSES).sort()).toEqual([...KINDS].sort());
  });

  it('picks the intended class for every code × kind × scope, keeping code, kind and message', () => {
    for (const code of CODES) {
      for (const kind of KINDS) {
        for (const scope of [undefined, ...SCOPES]) {
          const message = `${code}/${kind}/${scope}`;
          const e = fromNative({ code, kind, scope, message }) as KubenodeError;
          const want = expected(code, kind, scope);
          expect(e.constructor, message).toBe(want);
          expect(e).toBeInstanceOf(KubenodeError);
          expect(e.message).toBe(message);
          expect(e.kind, message).toBe(kind);
          // Classes with a fixed code keep it; the others keep the binding's.
          if (want === KubenodeError || want === userns.UsernsError) expect(e.code).toBe(code);
        }
      }
    }
  });

  it('an unknown code or kind is not trusted', () => {
    const e = fromNative({ code: 'ERR_SOMETHING', kind: 'family', scope: 'conntrack', message: 'm' });
    expect(e).toMatchObject({ code: 'ERR_KUBENODE_INTERNAL', message: 'm' });
    const k = fromNative({ code: 'ERR_KUBENODE_IO', kind: 'nonsense', message: 'm' }) as KubenodeError;
    expect(k.constructor).toBe(KubenodeError);
    expect(k.kind).toBeUndefined();
  });

  it("napi's own type statuses are type errors, from the binding as from a hand-built error", () => {
    // A boolean field given a string: napi refuses it before kubenode code runs.
    let thrown: unknown;
    try {
      new native.AllocationBitmap(8, '8', { seed: 'x' as unknown as number });
    } catch (e) {
      thrown = e;
    }
    expect(fromNative(thrown)).toBeInstanceOf(KubenodeTypeError);
    for (const code of ['BooleanExpected', 'ObjectExpected', 'ArrayExpected', 'FunctionExpected']) {
      const e = fromNative(Object.assign(new Error('bad'), { code }));
      expect(e, code).toBeInstanceOf(KubenodeTypeError);
    }
  });
});

describe('thrown errors carry the outcome fields', () => {
  it('a synchronous binding error has code, kind and scope', () => {
    let raw: unknown;
    try {
      native.sysctlSafeAllowlist(undefined, 'v1.99');
    } catch (e) {
      raw = e;
    }
    expect(raw).toBeInstanceOf(Error);
    expect(raw).toMatchObject({ code: 'ERR_KUBENODE_UNSUPPORTED', kind: 'kubernetes-version' });
    try {
      native.usernsLayout({ idsPerPod: 0, firstId: 0, length: 65536, maxPods: 1 });
    } catch (e) {
      raw = e;
    }
    expect(raw).toMatchObject({ code: 'ERR_KUBENODE_INVALID_ARG', kind: 'invalid-argument' });
    expect((raw as { scope?: unknown }).scope).toBeUndefined();
  });

  it('the public API keeps the kind on the typed error', () => {
    expect(() => sysctl.safeSysctlList('6.18', { kubernetesVersion: 'v1.99' })).toThrow(
      expect.objectContaining({ code: 'ERR_KUBENODE_UNSUPPORTED', kind: 'kubernetes-version' }),
    );
    const m = new bitmap.AllocationBitmap(4, 'r');
    expect(() => m.restore('other', Buffer.alloc(1))).toThrow(
      expect.objectContaining({ code: 'ERR_KUBENODE_CONFLICT', kind: 'conflict' }),
    );
    expect(() => servicecidr.parsePrefix('10.0.0.0/99')).toThrow(
      expect.objectContaining({ code: 'ERR_KUBENODE_PARSE', kind: 'parse' }),
    );
  });
});

describe('the TypeError and RangeError kinds', () => {
  it('are built-in errors and kubenode errors with a fixed code, and only their own kind', () => {
    const t = new KubenodeTypeError('bad type', { kind: 'family' });
    expect([t instanceof TypeError, t instanceof KubenodeError, t instanceof KubenodeTypeError]).toEqual([
      true,
      true,
      true,
    ]);
    expect([t.name, t.code, t.kind, String(t)]).toEqual([
      'KubenodeTypeError',
      'ERR_KUBENODE_INVALID_ARG',
      'family',
      'KubenodeTypeError: bad type',
    ]);
    const r = new KubenodeRangeError('too big');
    expect([r instanceof RangeError, r instanceof KubenodeError, r instanceof KubenodeTypeError]).toEqual([
      true,
      true,
      false,
    ]);
    expect([r.name, r.code, 'kind' in r, KubenodeRangeError.name]).toEqual([
      'KubenodeRangeError',
      'ERR_KUBENODE_OUT_OF_RANGE',
      false,
      'KubenodeRangeError',
    ]);
    class Narrow extends KubenodeTypeError {}
    expect(new Narrow('x') instanceof KubenodeTypeError).toBe(true);
    expect(new Narrow('x').code).toBe('ERR_KUBENODE_INVALID_ARG');
  });
});

describe('kubenode sysctl safe-list names the bad flag by kind', () => {
  const main = join(import.meta.dirname, '..', 'ts', 'cli', 'main.ts');
  const tsx = join(import.meta.dirname, '..', 'node_modules', '.bin', 'tsx');
  const run = (args: string[]) => spawnSync(tsx, [main, ...args], { encoding: 'utf8', timeout: 60_000 });

  it('a kernel version that mentions "Kubernetes version" is still a --kernel error', () => {
    const r = run(['sysctl', 'safe-list', '--kernel', 'Kubernetes version']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^kubenode: --kernel: /);
    const k = run(['sysctl', 'safe-list', '--kernel', '6.18', '--kubernetes-version', 'v1.99']);
    expect(k.status).toBe(2);
    expect(k.stderr).toMatch(/^kubenode: --kubernetes-version: Kubernetes version "v1.99" is not supported/);
  });
});
