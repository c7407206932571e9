// The rendered ServiceCIDR guard against the real kube-apiserver: random ServiceCIDR requests
// (create, update to dual-stack, delete) are sent as dry runs with the policy installed, and the
// API server's answer is compared with kubenode's own verdict (the API server's spec validation,
// then `ServiceCIDRGuard.check`, both in the native core). A policy missing one CEL branch
// must disagree.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servicecidr } from '../../ts/index.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { Api, messageOf, type Reply } from '../sysctl/support/admission.js';

const BASE = '/apis/networking.k8s.io/v1/servicecidrs';
let server: ApiServer;
let api: Api;

const guard = new servicecidr.ServiceCIDRGuard(
  {
    allowed: { ipv4: ['10.96.0.0/12', '192.168.0.0/16'], ipv6: ['fd00:10:96::/48'] },
    forbidden: ['10.100.0.0/16', 'fd00:10:96:ff::/64'],
    protectDefault: true,
  },
  'guard-diff',
);

/** Existing single-stack ServiceCIDRs the updates and deletes work on (made before the guard). */
const EXISTING: Record<string, string[]> = {
  'u-allowed': ['10.96.64.0/24'],
  'u-outside': ['172.16.0.0/24'],
};

interface Case {
  operation: 'CREATE' | 'UPDATE' | 'DELETE';
  name: string;
  cidrs: string[];
}

const V4_BASES = [
  [10, 96],
  [10, 100],
  [10, 111],
  [10, 112],
  [192, 168],
  [172, 16],
  [10, 0],
] as const;
const V6_BASES = ['fd00:10:96', 'fd00:10:96:ff', 'fd00:10:97', '2001:db8'] as const;

function masked(c: string): string {
  return servicecidr.parsePrefix(c).masked;
}

const v4 = fc
  .tuple(
    fc.constantFrom(...V4_BASES),
    fc.integer({ min: 0, max: 65535 }),
    fc.integer({ min: 8, max: 32 }),
    fc.nat(99),
  )
  .map(([[a, b], off, bits, roll]) => {
    const c = `${a}.${b}.${off >> 8}.${off & 255}/${bits}`;
    return roll < 90 ? masked(c) : c; // a tenth keeps host bits: the API server's validation refuses
  });
const v6 = fc
  .tuple(
    fc.constantFrom(...V6_BASES),
    fc.integer({ min: 0, max: 65535 }),
    fc.integer({ min: 32, max: 128 }),
    fc.nat(99),
  )
  .map(([base, off, bits, roll]) => {
    const c = `${base}::${off.toString(16)}:0/${bits}`;
    return roll < 90 ? masked(c) : c;
  });
const cidrList = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(fc.oneof(v4, v6)).map((x) => [...x]) },
  { weight: 3, arbitrary: fc.tuple(v4, v6).map((x) => [...x]) },
  { weight: 1, arbitrary: fc.tuple(v4, v4).map((x) => [...x]) },
);
const caseArb: fc.Arbitrary<Case> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .tuple(cidrList, fc.nat(49))
      .map(([cidrs, n]) => ({ operation: 'CREATE' as const, name: n === 0 ? 'kubernetes' : 'c', cidrs })),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom('u-allowed', 'u-outside', 'kubernetes'), v6, fc.boolean())
      .map(([name, c, add]) => ({ operation: 'UPDATE' as const, name, cidrs: add ? [c] : [] })),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom('u-allowed', 'u-outside', 'kubernetes').map((name) => ({
      operation: 'DELETE' as const,
      name,
      cidrs: [],
    })),
  },
);

type Verdict = 'allowed' | 'invalid' | { refused: string };

function local(c: Case, old: string[]): Verdict {
  const cidrs = c.operation === 'UPDATE' ? [...old, ...c.cidrs] : c.cidrs;
  if (c.operation !== 'DELETE' && servicecidr.validateServiceCIDRSpec(cidrs).length > 0) return 'invalid';
  const m = guard.check({ operation: c.operation, name: c.name, cidrs, oldCidrs: old, username: 'admin' });
  return m === null ? 'allowed' : { refused: m };
}

let seq = 0;
async function remote(c: Case, old: string[]): Promise<Reply> {
  if (c.operation === 'DELETE') return api.send('DELETE', `${BASE}/${c.name}?dryRun=All`);
  if (c.operation === 'CREATE') {
    // A fresh name per request, except the default's, which exists (admission runs first).
    const name = c.name === 'kubernetes' ? c.name : `c-${seq++}`;
    return api.send('POST', `${BASE}?dryRun=All`, { metadata: { name }, spec: { cidrs: c.cidrs } });
  }
  const cur = await api.send('GET', `${BASE}/${c.name}`);
  const meta = cur.body['metadata'] as Record<string, unknown>;
  return api.send('PUT', `${BASE}/${c.name}?dryRun=All`, {
    metadata: { ...meta, labels: { touched: `${seq++}` } },
    spec: { cidrs: [...old, ...c.cidrs] },
  });
}

function agrees(v: Verdict, r: Reply): boolean {
  if (v === 'allowed') return r.status === 200 || r.status === 201;
  if (v === 'invalid') return r.status === 422;
  return r.status === 403 && messageOf(r).endsWith(`denied request: ${v.refused}`);
}

async function differential(cases: Case[]) {
  const out = { allowed: 0, invalid: 0, refused: 0, disagreements: [] as unknown[] };
  for (const c of cases) {
    const old = c.name === 'kubernetes' ? ['10.96.0.0/28'] : (EXISTING[c.name] ?? []);
    const v = local(c, old);
    const r = await remote(c, old);
    if (v === 'allowed') out.allowed++;
    else if (v === 'invalid') out.invalid++;
    else out.refused++;
    if (!agrees(v, r)) out.disagreements.push({ case: c, local: v, status: r.status, message: messageOf(r) });
  }
  return out;
}

async function install(
  rendered: [Record<string, unknown>, Record<string, unknown>],
  probe: () => Promise<boolean>,
) {
  await api.applyPolicy(rendered);
  await api.until('the guard policy', probe);
}

beforeAll(async () => {
  server = await startApiServer();
  api = new Api(server, 8);
  for (const [name, cidrs] of Object.entries(EXISTING)) {
    const r = await api.send('POST', BASE, { metadata: { name }, spec: { cidrs } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
  }
}, 180_000);

afterAll(async () => {
  api?.close();
  await server?.stop();
});

describe('ServiceCIDR guard (real kube-apiserver)', () => {
  it('refuses what kubenode refuses, with the same message, and nothing else', {
    timeout: 600_000,
  }, async () => {
    await install(guard.render(), async () => {
      const r = await api.send('POST', `${BASE}?dryRun=All`, {
        metadata: { name: 'p' },
        spec: { cidrs: ['172.16.9.0/24'] },
      });
      return r.status === 403;
    });
    // Fixed cases first: each rule and each exemption once.
    const fixed: Case[] = [
      { operation: 'CREATE', name: 'c', cidrs: ['10.96.128.0/24'] },
      { operation: 'CREATE', name: 'c', cidrs: ['192.168.0.0/16', 'fd00:10:96::/64'] },
      { operation: 'CREATE', name: 'c', cidrs: ['10.0.0.0/24'] },
      { operation: 'CREATE', name: 'c', cidrs: ['10.100.5.0/24'] },
      { operation: 'CREATE', name: 'c', cidrs: ['10.96.0.0/12'] },
      { operation: 'CREATE', name: 'c', cidrs: ['10.96.0.0/24', 'fd00:10:96:ff::/112'] },
      { operation: 'CREATE', name: 'c', cidrs: ['10.96.0.1/24'] },
      { operation: 'CREATE', name: 'kubernetes', cidrs: ['10.96.0.0/24'] },
      { operation: 'DELETE', name: 'kubernetes', cidrs: [] },
      { operation: 'DELETE', name: 'u-outside', cidrs: [] },
      { operation: 'UPDATE', name: 'u-outside', cidrs: [] },
      { operation: 'UPDATE', name: 'u-allowed', cidrs: ['fd00:10:96::/64'] },
      { operation: 'UPDATE', name: 'u-allowed', cidrs: ['2001:db8::/64'] },
      { operation: 'UPDATE', name: 'kubernetes', cidrs: ['fd00:10:96::/112'] },
    ];
    const f = await differential(fixed);
    expect(f.disagreements).toEqual([]);
    expect(f.refused).toBe(8);

    const n = Number(process.env['KUBENODE_GUARD_DIFF_CASES'] ?? 600);
    const cases = fc.sample(caseArb, { numRuns: n, seed: 20261127 });
    const t0 = performance.now();
    const r = await differential(cases);
    console.log(
      `servicecidr guard differential: ${n} requests in ${((performance.now() - t0) / 1000).toFixed(1)} s: ` +
        `${r.allowed} allowed, ${r.refused} refused by the guard, ${r.invalid} by API validation, ` +
        `${r.disagreements.length} disagreements`,
    );
    expect(r.disagreements.slice(0, 5)).toEqual([]);
    expect(r.allowed).toBeGreaterThan(n / 10);
    expect(r.refused).toBeGreaterThan(n / 10);
    expect(r.invalid).toBeGreaterThan(0);

    // Without the forbidden-overlap validation the API server lets overlaps through: caught.
    const [vap, binding] = guard.render();
    const spec = vap['spec'] as { validations: unknown[] };
    const cut = { ...vap, spec: { ...spec, validations: spec.validations.slice(0, -1) } };
    await install([cut, binding], async () => {
      const x = await api.send('POST', `${BASE}?dryRun=All`, {
        metadata: { name: 'p' },
        spec: { cidrs: ['10.100.0.0/24'] },
      });
      return x.status === 201;
    });
    const broken = await differential(cases);
    console.log(`guard without its overlap branch: ${broken.disagreements.length} disagreements`);
    expect(broken.disagreements.length).toBeGreaterThan(0);
    await api.applyPolicy(guard.render());
  });

  it('renders a guard file; bad files are refused with the field named', () => {
    const g = servicecidr.parseServiceCIDRGuard(
      'apiVersion: kubenode.io/v1alpha1\nkind: ServiceCIDRGuard\nspec:\n  allowed:\n    ipv4: [10.96.0.0/12]\n',
    );
    expect(g.name).toBe('kubenode-servicecidr-guard');
    expect(g.spec).toEqual({
      allowed: { ipv4: ['10.96.0.0/12'], ipv6: [] },
      forbidden: [],
      protectDefault: true,
    });
    const bad = (spec: string) =>
      servicecidr.parseServiceCIDRGuard(
        `apiVersion: kubenode.io/v1alpha1\nkind: ServiceCIDRGuard\nspec: ${spec}\n`,
        'g.yaml',
      );
    expect(() => bad('{allowed: {ipv4: [10.96.0.1/12]}}')).toThrow(
      'g.yaml: spec.allowed.ipv4[0]: "10.96.0.1/12" must not have bits set beyond the prefix length',
    );
    expect(() => bad('{allowed: {ipv6: [10.0.0.0/8]}}')).toThrow(
      'g.yaml: spec.allowed.ipv6[0]: 10.0.0.0/8 is not an IPv6 prefix',
    );
    expect(() => bad('{allowed: {ipv4: [10.0.0.0/8]}, extra: 1}')).toThrow(
      'g.yaml: spec.extra: unknown field',
    );
    expect(() => bad('{allowed: {}}')).toThrow(/at least one prefix/);
    expect(() => bad('{allowed: {ipv4: [10.0.0.0/8]}, protectDefault: "yes"}')).toThrow(
      /protectDefault must be a boolean/,
    );
    try {
      bad('{allowed: {ipv4: [x]}}');
    } catch (e) {
      expect(e).toBeInstanceOf(servicecidr.ServiceCIDRGuardError);
      expect((e as { code: string }).code).toBe('ERR_KUBENODE_INVALID_ARG');
    }
  });
});
