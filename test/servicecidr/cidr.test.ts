import { KubeConfig } from '@kubernetes/client-node';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isKubenodeError, KubenodeRangeError, KubenodeTypeError, servicecidr } from '../../ts/index.js';

const sc = (name: string, ...cidrs: string[]) => ({ metadata: { name }, spec: { cidrs } });
const names = (l: { metadata: { name: string } }[]) => l.map((o) => o.metadata.name).sort();

describe('servicecidr helpers (upstream pkg/api/servicecidr results)', () => {
  const list = [
    sc('kubernetes', '10.0.0.0/24', '2001:db8::/96'),
    sc('secondary', '10.0.0.0/16', '2001:db8::/64'),
  ];

  it('overlapsPrefix / containsPrefix / containsAddress on IPv4 and IPv6', () => {
    expect(names(servicecidr.overlapsPrefix(list, '10.0.0.0/8'))).toEqual(['kubernetes', 'secondary']);
    expect(names(servicecidr.overlapsPrefix(list, '192.168.0.0/24'))).toEqual([]);
    expect(names(servicecidr.containsPrefix(list, '10.0.0.0/18'))).toEqual(['secondary']);
    expect(names(servicecidr.containsPrefix(list, '2001:db8::/72'))).toEqual(['secondary']);
    expect(names(servicecidr.containsPrefix(list, '2001:db8::/52'))).toEqual([]);
    expect(names(servicecidr.containsAddress(list, '10.0.0.1'))).toEqual(['kubernetes', 'secondary']);
    expect(names(servicecidr.containsAddress(list, '10.0.0.255'))).toEqual(['secondary']);
    expect(names(servicecidr.containsAddress(list, '10.0.0.0'))).toEqual([]);
    expect(names(servicecidr.containsAddress(list, '2001:db8::ffff:ffff'))).toEqual([
      'kubernetes',
      'secondary',
    ]);
    expect(names(servicecidr.containsAddress(list, '::ffff:10.0.0.1'))).toEqual([]);
  });

  it('prefixContainsIP, broadcastAddress, ipToAddr, parsePrefix', () => {
    expect(servicecidr.prefixContainsIP('10.0.0.0/31', '10.0.0.1')).toBe(false);
    expect(servicecidr.prefixContainsIP('2001:db8::/127', '2001:db8::1')).toBe(true);
    expect(servicecidr.broadcastAddress('192.168.0.0/23')).toBe('192.168.1.255');
    expect(servicecidr.broadcastAddress('fd00:1:2:3::/57')).toBe('fd00:1:2:7f:ffff:ffff:ffff:ffff');
    expect(servicecidr.ipToAddr('::ffff:192.168.0.1')).toBe('192.168.0.1');
    expect(servicecidr.ipToAddr('nope')).toBeNull();
    expect(servicecidr.parsePrefix('10.0.0.5/24')).toEqual({
      family: 'IPv4',
      bits: 24,
      address: '10.0.0.5',
      masked: '10.0.0.0/24',
      ipv4Mapped: false,
    });
    expect(servicecidr.parsePrefix('::ffff:10.0.0.0/104').ipv4Mapped).toBe(true);
  });

  it('bad input: typed errors and strict validation messages', () => {
    for (const bad of ['10.0.0.0', '10.0.0.0/33', '010.0.0.0/8', 'fe80::%eth0/64', '10.0.0.0/024', '']) {
      let err: unknown;
      try {
        servicecidr.parsePrefix(bad);
      } catch (e) {
        err = e;
      }
      expect(isKubenodeError(err), bad).toBe(true);
      expect((err as { code: string }).code).toBe('ERR_KUBENODE_PARSE');
    }
    expect(() => servicecidr.parsePrefix(42 as unknown as string)).toThrow(/must be a string/);
    expect(servicecidr.validateCIDR('10.0.0.1/24')).toEqual([
      'must not have bits set beyond the prefix length',
    ]);
    expect(servicecidr.validateCIDR('::ffff:10.0.0.0/104')).toEqual([
      'must not have an IPv4-mapped IPv6 address',
    ]);
    expect(servicecidr.validateCIDR('bogus')[0]).toMatch(/must be a valid CIDR value/);
    expect(servicecidr.validateCIDR('10.0.0.0/8')).toEqual([]);
    // Objects missing fields are simply not matched.
    const odd = [
      {},
      { metadata: { name: 'x' } },
      { spec: { cidrs: ['junk', 7] } },
    ] as servicecidr.ServiceCIDRLike[];
    expect(servicecidr.overlapsPrefix(odd, '0.0.0.0/0')).toEqual([]);
  });
});

describe('CIDRIndex', () => {
  it('answers like the linear scan (randomised)', () => {
    const prefix = fc
      .tuple(
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 0, max: 255 }),
        fc.integer({ min: 20, max: 32 }),
      )
      .map(([b, c, bits]) => servicecidr.parsePrefix(`10.${b}.${c}.0/${bits}`).masked);
    const ip = fc
      .tuple(
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 0, max: 255 }),
        fc.integer({ min: 0, max: 255 }),
      )
      .map(([b, c, d]) => `10.${b}.${c}.${d}`);
    fc.assert(
      fc.property(
        fc.array(prefix, { minLength: 1, maxLength: 30 }),
        fc.array(ip, { maxLength: 20 }),
        (ps, ips) => {
          const ix = new servicecidr.CIDRIndex();
          const objs = ps.map((p, i) => sc(`s${i}`, p));
          ix.upsertMany(objs.map((o) => ({ name: o.metadata.name, cidrs: o.spec.cidrs })));
          for (const a of ips) {
            expect(ix.containing(a)).toEqual(names(servicecidr.containsAddress(objs, a)));
          }
          for (const p of ps.slice(0, 5)) {
            expect(ix.overlapping(p)).toEqual(names(servicecidr.overlapsPrefix(objs, p)));
            expect(ix.containingPrefix(p)).toEqual(names(servicecidr.containsPrefix(objs, p)));
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it('upsert/remove and bad input', () => {
    const ix = new servicecidr.CIDRIndex();
    expect(ix.upsert('a', ['10.0.0.0/24', 'garbage', '::ffff:1.2.3.0/120'])).toEqual(['garbage']);
    expect(ix.size).toBe(1);
    expect(ix.containing('10.0.0.7')).toEqual(['a']);
    expect(() => ix.containing('10.0.0.300')).toThrow(/unable to parse IP/);
    expect(() => ix.upsert('b', 'x' as unknown as string[])).toThrow(/array of strings/);
    expect(ix.remove('a')).toBe(true);
    expect(ix.containing('10.0.0.7')).toEqual([]);
  });

  it('canDelete follows upstream canDeleteCIDR', () => {
    const ix = new servicecidr.CIDRIndex();
    ix.upsert('a', ['10.0.0.0/24']);
    expect(ix.canDelete('a', ['10.0.0.0/24'], [{ name: '10.0.0.9', family: 'IPv4' }])).toEqual({
      outcome: 'blocked',
      ip: '10.0.0.9',
      unparsable: [],
    });
    // A missing family label never matches.
    expect(ix.canDelete('a', ['10.0.0.0/24'], [{ name: '10.0.0.9', family: undefined }]).outcome).toBe(
      'noOrphans',
    );
    ix.upsert('parent', ['10.0.0.0/8']);
    expect(ix.canDelete('a', ['10.0.0.0/24'], [{ name: '10.0.0.9', family: 'IPv4' }]).outcome).toBe(
      'containedInOther',
    );
  });

  it('canDelete: an absent family label never matches the empty family of an unparsable CIDR', () => {
    const ix = new servicecidr.CIDRIndex();
    ix.upsert('j', ['junk', '10.1.0.0/24']);
    const cidrs = ['junk', '10.1.0.0/24'];
    expect(ix.canDelete('j', cidrs, [{ name: '10.1.0.9', family: undefined }]).outcome).toBe('noOrphans');
    // Present but empty: upstream's `ip-family=` selector matches it.
    expect(ix.canDelete('j', cidrs, [{ name: '10.1.0.9', family: '' }])).toEqual({
      outcome: 'blocked',
      ip: '10.1.0.9',
      unparsable: [],
    });
  });
});

describe('typed errors', () => {
  it('CIDRIndex rejects malformed arguments with KubenodeTypeError', () => {
    const ix = new servicecidr.CIDRIndex();
    const bad: (() => unknown)[] = [
      () => ix.upsertMany('x' as unknown as []),
      () => ix.upsertMany([{ name: 1 as unknown as string, cidrs: [] }]),
      () => ix.upsertMany([{ name: 'a', cidrs: 'x' as unknown as string[] }]),
      () => ix.upsertMany([null as unknown as { name: string; cidrs: string[] }]),
      () => ix.remove(5 as unknown as string),
      () => ix.has(undefined as unknown as string),
    ];
    for (const f of bad) {
      expect(f).toThrow(KubenodeTypeError);
      try {
        f();
      } catch (e) {
        expect((e as { code?: string }).code).toBe('ERR_KUBENODE_INVALID_ARG');
      }
    }
    expect(ix.size).toBe(0);
    expect(ix.upsertMany([{ name: 'a', cidrs: ['10.0.0.0/24', 'bad'] }])).toBe(1);
    expect(ix.has('a')).toBe(true);
    expect(ix.remove('a')).toBe(true);
  });

  it('leader election timings out of order throw KubenodeRangeError', () => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const make = () =>
      new servicecidr.ServiceCIDRController({
        kubeConfig,
        leaderElection: { leaseDurationMs: 1000, renewDeadlineMs: 2000, retryPeriodMs: 500 },
      });
    expect(make).toThrow(KubenodeRangeError);
    expect(make).toThrow(/leaseDuration > renewDeadline > retryPeriod > 0/);
  });
});

// Upstream's TestController_ipToCidrs and TestController_cidrToCidrs tables
// (pkg/controller/servicecidrs, v1.37.2; the same in v1.36.3): the ServiceCIDRs an IPAddress or a
// ServiceCIDR concerns, through the same lookups the controller makes.
describe('upstream servicecidrs_controller_test.go lookup tables', () => {
  const mk = (name: string, v4: string, v6: string) => sc(name, ...[v4, v6].filter((c) => c !== ''));
  const base = [mk('kubernetes', '192.168.0.0/24', '2001:db2::/64')];
  const unrelated = [mk('unrelated', '10.0.0.0/24', ''), mk('unrelated2', '10.0.0.0/16', '')];
  const three = [
    ...base,
    mk('overlapping', '192.168.0.0/24', '2001:db2::/64'),
    mk('overlapping2', '192.168.0.0/26', '2001:db2::/96'),
    ...unrelated,
  ];
  const twoEqual = [...base, mk('overlapping', '192.168.0.0/24', '2001:db2::/96'), ...unrelated];

  it.each([
    ['empty', [], '192.168.0.23', []],
    ['one CIDR', [...base, ...unrelated], '192.168.0.23', ['kubernetes']],
    ['two equal CIDR', twoEqual, '192.168.0.23', ['kubernetes', 'overlapping']],
    [
      'three CIDR - two same and one larger',
      three,
      '192.168.0.23',
      ['kubernetes', 'overlapping', 'overlapping2'],
    ],
    ['three CIDR - IPv4 subnet address', three, '192.168.0.0', []],
    ['three CIDR - IPv4 broadcast address', three, '192.168.0.63', ['kubernetes', 'overlapping']],
    ['three CIDR - IPv6 subnet address', three, '2001:db2::', []],
    [
      'three CIDR - IPv6 broadcast address',
      three,
      '2001:0db2::ffff:ffff:ffff:ffff',
      ['kubernetes', 'overlapping'],
    ],
  ] as const)('ipToCidrs: %s', (_name, list, ip, want) => {
    expect(names(servicecidr.containsAddress([...list], ip))).toEqual([...want].sort());
  });

  it.each([
    ['empty', [], []],
    ['one CIDR', [...base, ...unrelated], ['kubernetes']],
    ['two equal CIDR', twoEqual, ['kubernetes', 'overlapping']],
    ['three CIDR - two same and one larger', three, ['kubernetes', 'overlapping', 'overlapping2']],
  ] as const)('cidrToCidrs: %s', (_name, list, want) => {
    // The union over the ServiceCIDR's prefixes, as overlappingServiceCIDRs collects it.
    const got = new Set<string>();
    for (const prefix of ['192.168.0.0/24', '2001:db2::/64']) {
      for (const o of servicecidr.overlapsPrefix([...list], prefix)) got.add(o.metadata.name);
    }
    expect([...got].sort()).toEqual([...want].sort());
  });
});
