// SysctlPolicy / SysctlNamePolicy through the façade: the native core owns the rules and the
// texts, one crossing per pod, and the JS-shape checks keep the order one pass over the list
// gives (a malformed item is reported only when nothing before it is).
import { afterEach, describe, expect, it } from 'vitest';
import { KubenodeTypeError, sysctl } from '../../ts/index.js';
import { loadNative } from '../../ts/native.js';

function pod(sysctls: unknown[]): { pod: sysctl.PodLike } {
  return { pod: { spec: { securityContext: { sysctls } } } as sysctl.PodLike };
}

/** Counts every call into the binding (functions and class methods) until restored. */
function countNativeCalls(): { calls: () => number; restore: () => void } {
  const b = loadNative() as unknown as Record<string, unknown>;
  let n = 0;
  const undo: (() => void)[] = [];
  const wrap = (o: Record<string, unknown>, k: string) => {
    // Getters (`slot`, …) are left alone: reading them needs an instance.
    const f = Object.getOwnPropertyDescriptor(o, k)?.value;
    if (typeof f !== 'function' || k === 'constructor') return;
    o[k] = function (this: unknown, ...args: unknown[]) {
      n++;
      return (f as (...a: unknown[]) => unknown).apply(this, args);
    };
    undo.push(() => {
      o[k] = f;
    });
  };
  for (const k of Object.keys(b)) {
    const v = b[k];
    const proto =
      typeof v === 'function' ? (v as { prototype?: Record<string, unknown> }).prototype : undefined;
    const methods = proto ? Object.getOwnPropertyNames(proto).filter((m) => m !== 'constructor') : [];
    if (methods.length > 0) for (const m of methods) wrap(proto!, m);
    else wrap(b, k);
  }
  return {
    calls: () => n,
    restore: () => {
      for (const u of undo) u();
    },
  };
}

describe('one crossing per pod', () => {
  let restore = () => {};
  afterEach(() => restore());

  it('admits and validates a pod of five sysctls with one native call each', () => {
    const p = new sysctl.SysctlPolicy([
      { name: 'net.core.somaxconn', min: 128, max: 4096 },
      { name: 'net.ipv4.*', values: ['0', '1'] },
      { name: 'kernel.*' },
    ]);
    const n = new sysctl.SysctlNamePolicy(['net.*', 'kernel.sem']);
    const five = pod([
      { name: 'net.core.somaxconn', value: '1024' },
      { name: 'net/ipv4/tcp_syncookies', value: 1 },
      { name: 'kernel.sem', value: '1 2 3 4' },
      { name: 'kernel.shm_rmid_forced', value: '1' },
      { name: 'net.ipv4.tcp_ecn', value: '0' },
    ]);
    const c = countNativeCalls();
    restore = c.restore;
    expect(p.admit(five)).toEqual({ admit: true });
    expect(c.calls()).toBe(1);
    expect(p.validate(five.pod)).toEqual([]);
    expect(c.calls()).toBe(2);
    expect(n.admit(five).message).toBe('forbidden sysctl: "kernel.shm_rmid_forced" not allowed by policy');
    expect(c.calls()).toBe(3);
  });
});

describe('alpha annotations through the core', () => {
  let restore = () => {};
  afterEach(() => restore());

  it('converts both annotations of a pod in one native call, with upstream texts', () => {
    const annotations = {
      [sysctl.SYSCTLS_ANNOTATION]: 'kernel.shm_rmid_forced=1,net.core.somaxconn=1024',
      [sysctl.UNSAFE_SYSCTLS_ANNOTATION]: 'net.core.somaxconn=1024,kernel.msgmax=1 2 3,x\u00ad',
    };
    const c = countNativeCalls();
    restore = c.restore;
    const valid = sysctl.sysctlsFromAnnotations(
      {
        metadata: {
          annotations: { ...annotations, [sysctl.UNSAFE_SYSCTLS_ANNOTATION]: 'kernel.msgmax=1 2 3' },
        },
      },
      { safeSysctls: ['kernel.shm_rmid_forced', 'net.core.somaxconn'] },
    );
    expect(c.calls()).toBe(1);
    expect(valid).toEqual({
      sysctls: [
        { name: 'kernel.shm_rmid_forced', value: '1' },
        { name: 'net.core.somaxconn', value: '1024' },
        { name: 'kernel.msgmax', value: '1 2 3' },
      ],
      errors: [],
    });
    const r = sysctl.sysctlsFromAnnotations({ metadata: { annotations } } as sysctl.PodLike, {
      safeSysctls: ['kernel.shm_rmid_forced'],
    });
    expect(c.calls()).toBe(2);
    expect(r.sysctls).toEqual([
      { name: 'kernel.shm_rmid_forced', value: '1' },
      { name: 'net.core.somaxconn', value: '1024' },
    ]);
    expect(r.errors.map((e) => e.message)).toEqual([
      'metadata.annotations[security.alpha.kubernetes.io/unsafe-sysctls]: Invalid value: "net.core.somaxconn=1024,kernel.msgmax=1 2 3,x\\u00ad": sysctl "x\\u00ad" not of the format sysctl_name=value',
      'metadata.annotations[security.alpha.kubernetes.io/sysctls][1].name: Invalid value: "net.core.somaxconn": not a safe sysctl; list it in security.alpha.kubernetes.io/unsafe-sysctls',
    ]);
  });
});

describe('compiled rules carry the core texts', () => {
  it('gives renderers each rule with the details its violations report', () => {
    const p = new sysctl.SysctlPolicy([
      { name: 'a.b' },
      { name: 'a.c', values: [' 1  2 ', '1 2', 'x"y'] },
      { name: 'a.d', min: -5 },
      { name: 'a.e', fields: [{}, { min: 1, max: 9 }] },
    ]);
    const [any, values, range, fields] = p.rules();
    expect(any).toEqual({ segments: ['a', 'b'], details: {} });
    expect(values).toEqual({
      segments: ['a', 'c'],
      values: new Set(['1 2', 'x"y']),
      details: { tooLong: 'must be at most 4096 characters', values: 'must be one of "1 2", "x\\"y"' },
    });
    expect(range).toEqual({
      segments: ['a', 'd'],
      min: -5,
      details: {
        tooLong: 'must be at most 4096 characters',
        shape: 'must be an integer',
        range: 'must be at least -5',
      },
    });
    expect(fields).toEqual({
      segments: ['a', 'e'],
      fields: [{}, { min: 1, max: 9 }],
      details: {
        tooLong: 'must be at most 4096 characters',
        shape: 'must be 2 integers separated by whitespace',
        fields: ['', 'field 2 must be between 1 and 9'],
      },
    });
    // The texts are the ones admission reports.
    expect(p.admit(pod([{ name: 'a.e', value: '0 10' }])).message).toBe(
      `forbidden sysctl: "a.e" not allowed by policy: value ${fields!.details.fields![1]}`,
    );
  });
});

describe('errors come in list order', () => {
  const compile = (entries: unknown[]) => () => new sysctl.SysctlPolicy(entries as never);

  it('reports a rule broken by an earlier entry before a malformed later one', () => {
    expect(compile([{ name: 'Net' }, { name: 5 }])).toThrow(
      'entries[0].name "Net": each segment must match [a-z]+[a-z_-0-9]* or be "*"',
    );
    expect(compile([{ name: 'net' }, { name: 5 }])).toThrow('entries[1].name must be a string');
    expect(compile([{ name: 'a', min: 3, max: 1 }, null])).toThrow('entries[0]: min 3 is greater than max 1');
    expect(() => new sysctl.SysctlNamePolicy(['a', '', 7 as never])).toThrow(
      'allowed[1] must be a non-empty string, got ""',
    );
    expect(() => new sysctl.SysctlNamePolicy(['a', 7 as never, ''])).toThrow(
      'allowed[1] must be a non-empty string, got 7',
    );
  });

  it('refuses a list that is not an array with a typed error naming it', () => {
    expect(() => new sysctl.SysctlPolicy(5 as never)).toThrow(
      new KubenodeTypeError('entries must be an array, got 5'),
    );
    expect(() => new sysctl.SysctlNamePolicy('a' as never)).toThrow(
      new KubenodeTypeError('allowed must be an array, got "a"'),
    );
    // A core compiled by one class's fromAnnotation is never taken by the other's constructor.
    expect(sysctl.SysctlNamePolicy.fromAnnotation('a.b').allows('a.b')).toBe(true);
    expect(() => new sysctl.SysctlPolicy(null as never)).toThrow(KubenodeTypeError);
  });

  it('within an entry, checks the name and the kind of rule before the shape of its bounds', () => {
    expect(compile([{ name: 'a..b', min: 'x' }])).toThrow('entries[0].name "a..b"');
    expect(compile([{ name: 'a', values: ['1'], min: 'x' }])).toThrow(
      'entries[0]: set either values or min/max or fields, not several',
    );
    expect(compile([{ name: 'a', min: 'x', max: -3 }])).toThrow('entries[0].min must be an integer, got "x"');
    expect(compile([{ name: 'a', min: 9, max: 'x' }])).toThrow('entries[0].max must be an integer, got "x"');
    expect(compile([{ name: 'a', fields: [{ min: 5, max: 1 }, 'x'] }])).toThrow(
      'entries[0].fields[0]: min 5 is greater than max 1',
    );
    expect(compile([{ name: 'a', fields: ['x'] }])).toThrow('entries[0].fields[0] must be an object');
    expect(compile([{ name: 'a', fields: 3 }])).toThrow(
      'entries[0].fields must be a non-empty array of { min?, max? }',
    );
    expect(compile([{ name: 'a', fields: [] }])).toThrow(
      'entries[0].fields must be a non-empty array of { min?, max? }',
    );
    expect(compile([{ name: 'a', values: [1] }])).toThrow('entries[0].values must be an array of strings');
    expect(compile([{ name: 'a', values: null }])).toThrow(KubenodeTypeError);
  });

  it('admission reads a malformed sysctl only when the ones before it are admitted', () => {
    const p = new sysctl.SysctlPolicy([{ name: 'net.core.somaxconn', min: 128 }]);
    expect(p.admit(pod([{ name: 'kernel.sem', value: '1' }, { name: 5 }])).message).toBe(
      'forbidden sysctl: "kernel.sem" not allowed by policy',
    );
    expect(p.admit(pod([{ name: 'kernel.sem', value: {} }])).message).toBe(
      'forbidden sysctl: "kernel.sem" not allowed by policy',
    );
    expect(() => p.admit(pod([{ name: 'net.core.somaxconn', value: {} }]))).toThrow(
      'spec.securityContext.sysctls[0].value must be a string or number, got object',
    );
    expect(() => p.admit(pod([{ name: 'net.core.somaxconn', value: '200' }, 7]))).toThrow(
      'spec.securityContext.sysctls[1] must be an object, got 7',
    );
    expect(p.validate(pod([{ name: 'kernel.sem', value: {} }]).pod).map((e) => e.message)).toEqual([
      'spec.securityContext.sysctls[0]: Forbidden: sysctl "kernel.sem" is not allowed',
    ]);
    expect(() => p.validate(pod([{ name: 'net.core.somaxconn', value: [] }]).pod)).toThrow(KubenodeTypeError);
    const all = new sysctl.SysctlNamePolicy(['*']);
    expect(all.allows(5 as never)).toBe(true);
    expect(() => new sysctl.SysctlNamePolicy([]).allows(5 as never)).toThrow('name must be a string, got 5');
  });
});

describe('annotation forms', () => {
  it('reads the numbers as JavaScript Number does, and names the bad item', () => {
    const p = sysctl.SysctlPolicy.fromAnnotation('a.b=min:0x10:max: 1e3 ,c.d=values:x  y,e.f');
    expect(p.rules().map((e) => [e.min, e.max, e.values && [...e.values]])).toEqual([
      [16, 1000, undefined],
      [undefined, undefined, ['x', 'y']],
      [undefined, undefined, undefined],
    ]);
    expect(() => sysctl.SysctlPolicy.fromAnnotation('a=min:1.5')).toThrow(
      'sysctl policy "a=min:1.5": min must be an integer',
    );
    expect(() => sysctl.SysctlPolicy.fromAnnotation('a\u00a0=max:1:x')).toThrow(
      'sysctl policy "a\\u00a0=max:1:x": expected key:value pairs',
    );
    expect(() => sysctl.SysctlPolicy.fromAnnotation('a=step:1')).toThrow(KubenodeTypeError);
    const n = sysctl.SysctlNamePolicy.fromAnnotation('kernel.shmmax,fs.mqueue.*');
    expect(n).toBeInstanceOf(sysctl.SysctlNamePolicy);
    expect(n.rules()).toEqual({ all: false, exact: ['kernel.shmmax'], prefixes: ['fs.mqueue.'] });
    expect(sysctl.SysctlNamePolicy.fromAnnotation('').allows('kernel.sem')).toBe(false);
  });
});

describe('Pod Security baseline through the core', () => {
  it('reports a bad policy version before a malformed pod, and reads names as given', () => {
    const bad = { spec: { securityContext: { sysctls: [7] } } } as unknown as sysctl.PodLike;
    expect(() => sysctl.checkBaseline(bad, 'v1.036')).toThrow(/policy version/);
    expect(() => sysctl.checkBaseline(bad, 'latest')).toThrow(
      'spec.securityContext.sysctls[0] must be an object',
    );
    expect(sysctl.checkBaseline(pod([{ name: 'kernel/shm_rmid_forced' }, {}]).pod, 'latest')).toEqual({
      allowed: false,
      forbiddenReason: 'forbidden sysctls',
      forbiddenDetail: 'kernel/shm_rmid_forced, ',
    });
    expect(sysctl.parsePolicyVersion('latest')).toBe(Number.POSITIVE_INFINITY);
    expect(sysctl.parsePolicyVersion('v1.0')).toBe(0);
  });
});
