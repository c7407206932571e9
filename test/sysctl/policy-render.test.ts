// The renderer, the policy file format and `kubenode sysctl policy` without an API server:
// determinism, typed errors for bad input, the committed schema, the value rules shared with
// the CEL, and one file driving the node-side PodAdmitChain. test/sysctl/policy-apiserver.test.ts
// proves the rendered objects against a real kube-apiserver.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { KubenodeRangeError, KubenodeTypeError, sysctl } from '../../ts/index.js';
import { parseLabelSelector } from '../../ts/sysctl/render/selector.js';

const root = join(import.meta.dirname, '..', '..');
const main = join(root, 'ts', 'cli', 'main.ts');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const dir = mkdtempSync(join(tmpdir(), 'kubenode-sysctl-policy-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(tsx, [main, ...args], { encoding: 'utf8', timeout: 60_000, maxBuffer: 64 << 20 });
  if (r.error) throw r.error;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

let n = 0;
function file(text: string): string {
  const f = join(dir, `policy-${n++}.yaml`);
  writeFileSync(f, text);
  return f;
}

const header = 'apiVersion: kubenode.io/v1alpha1\nkind: SysctlPolicy\nmetadata:\n  name: p\n';
const pod = (sysctls: { name: string; value: string }[], spec: Record<string, unknown> = {}) => ({
  spec: { ...spec, securityContext: { sysctls } },
});

describe('renderAdmissionPolicy', () => {
  const policy = new sysctl.SysctlPolicy([
    { name: 'net.core.somaxconn', min: 128, max: 4096 },
    { name: 'net.ipv4.ip_local_port_range', fields: [{ min: 1024, max: 65535 }, { min: 1024 }] },
  ]);

  it('renders a v1 policy and binding, the same for the same input', () => {
    const opts = {
      name: 'web',
      namespaceSelector: parseLabelSelector('tier=web'),
      workloadKinds: ['CronJob', 'Deployment'] as const,
      includeSafeSysctls: true,
      kernelVersion: '6.1',
    };
    const [vap, binding] = sysctl.renderAdmissionPolicy(policy, {
      ...opts,
      workloadKinds: [...opts.workloadKinds],
    });
    expect(vap).toMatchObject({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
    });
    expect(binding).toMatchObject({
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: 'web-binding' },
      spec: {
        policyName: 'web',
        validationActions: ['Deny'],
        matchResources: { namespaceSelector: { matchLabels: { tier: 'web' } } },
      },
    });
    const again = sysctl.renderAdmissionPolicy(policy, { ...opts, workloadKinds: ['Deployment', 'CronJob'] });
    expect(JSON.stringify(again)).toBe(JSON.stringify([vap, binding]));
    const rules = (vap['spec'] as { matchConstraints: { resourceRules: { resources: string[] }[] } })
      .matchConstraints.resourceRules;
    expect(rules.map((r) => r.resources)).toEqual([['pods'], ['deployments'], ['cronjobs']]);
  });

  it('takes the safe list from the native allowlist for the kernel given', () => {
    const cel = (k: string) =>
      JSON.stringify(sysctl.renderAdmissionPolicy(null, { includeSafeSysctls: true, kernelVersion: k }));
    const gated = sysctl.safeSysctlTable().find((r) => r.minKernel !== undefined)!;
    expect(cel('3.10')).not.toContain(`\\"${gated.name}\\"`);
    expect(cel('6.1')).toContain(`\\"${gated.name}\\"`);
    for (const name of sysctl.safeSysctlAllowlist('6.1')) expect(cel('6.1')).toContain(`\\"${name}\\"`);
  });

  it('refuses bad input with typed errors', () => {
    const bad = (p: unknown, o: unknown) => () => sysctl.renderAdmissionPolicy(p as null, o as object);
    expect(bad({}, {})).toThrow(sysctl.SysctlPolicy.name);
    expect(bad(null, {})).toThrow(/nothing to render/);
    expect(bad(policy, { name: 'Bad_Name' })).toThrow(/DNS subdomain/);
    expect(bad(policy, { workloadKinds: ['Pod'] })).toThrow(/unknown kind "Pod"/);
    expect(bad(null, { allowedUnsafeSysctls: ['vm.swappiness'] })).toThrow(sysctl.SysctlAllowlistError);
    expect(bad(null, { includeSafeSysctls: 'yes' })).toThrow('options.includeSafeSysctls must be a boolean');
    expect(bad(policy, { namespaceSelector: { matchLabels: { tier: 1 } } })).toThrow(
      'options.namespaceSelector.matchLabels.tier must be of type string, got integer',
    );
    expect(bad(policy, { namespaceSelector: { matchExpressions: [{ key: 'a', operator: 'Has' }] } })).toThrow(
      /options.namespaceSelector.matchExpressions\[0\].operator must be one of/,
    );
    try {
      bad(policy, { workloadKinds: 'all' })();
    } catch (e) {
      expect((e as { code: string }).code).toBe('ERR_KUBENODE_INVALID_ARG');
    }
  });
});

describe('policy values', () => {
  const p = new sysctl.SysctlPolicy([
    {
      name: 'net.ipv4.ip_local_port_range',
      fields: [
        { min: 1024, max: 65535 },
        { min: 1024, max: 65535 },
      ],
    },
    { name: 'kernel.*', values: ['1  2'] },
    { name: 'net.core.somaxconn', min: 128, max: 4096 },
  ]);
  const admit = (name: string, value: string) => p.admit({ pod: pod([{ name, value }]) });

  it('checks each field of a multi-value sysctl', () => {
    expect(admit('net.ipv4.ip_local_port_range', '\t1024   65535 ').admit).toBe(true);
    expect(admit('net.ipv4.ip_local_port_range', '1024 80').message).toBe(
      'forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed by policy: value field 2 must be between 1024 and 65535',
    );
    expect(admit('net.ipv4.ip_local_port_range', '1024').message).toMatch(
      /must be 2 integers separated by whitespace$/,
    );
  });

  it('folds only the kernel whitespace (ASCII), as the rendered CEL does', () => {
    expect(admit('kernel.sem', ' 1\n2 ').admit).toBe(true);
    // U+00A0 is whitespace to JavaScript's trim but not to the kernel (nor to RE2's class).
    const details = (value: string) =>
      p.validate(pod([{ name: 'net.core.somaxconn', value }])).map((e) => e.detail);
    expect(details('\u00a0200')).toEqual(['must be an integer']);
    expect(details('\u2003200\ufeff')).toEqual(['must be an integer']);
    expect(details(' 200\t')).toEqual([]);
    expect(admit('kernel.sem', '1\u00a02').admit).toBe(false);
  });

  it('refuses checked values longer than 4,096 code points, as the rendered CEL does', () => {
    expect(admit('net.core.somaxconn', `200${' '.repeat(4093)}`).admit).toBe(true);
    expect(admit('net.core.somaxconn', `200${' '.repeat(4094)}`).message).toMatch(
      /value must be at most 4096 characters$/,
    );
    expect(admit('kernel.sem', '\u{1f600}'.repeat(4096)).message).toMatch(/value must be one of "1 2"$/);
    expect(admit('kernel.sem', '\u{1f600}'.repeat(4097)).message).toMatch(
      /value must be at most 4096 characters$/,
    );
    // Entries without a value rule never look at the value.
    expect(
      new sysctl.SysctlPolicy([{ name: 'a.b' }]).admit({
        pod: pod([{ name: 'a.b', value: 'x'.repeat(9999) }]),
      }).admit,
    ).toBe(true);
  });

  it('treats integers beyond 2^53 as not integers, whatever their leading zeros', () => {
    expect(admit('net.core.somaxconn', '00000000000000000000200').admit).toBe(true);
    expect(admit('net.core.somaxconn', '9007199254740993').message).toMatch(/must be an integer$/);
    expect(admit('net.core.somaxconn', '-0').message).toMatch(/must be between 128 and 4096$/);
  });
});

describe('policy files', () => {
  it('the committed schema is the one the loader enforces', () => {
    const committed = JSON.parse(readFileSync(join(root, 'schemas', 'sysctl-policy.schema.json'), 'utf8'));
    expect(committed).toEqual(JSON.parse(JSON.stringify(sysctl.SYSCTL_POLICY_SCHEMA)));
  });

  it('one file drives the node-side PodAdmitChain and the rendered policy', async () => {
    const f = await sysctl.loadSysctlPolicyFile(join(root, 'examples', 'sysctl-policy.yaml'));
    const chain = f.admitChain();
    expect(chain.handlers).toEqual(['sysctl-policy']);
    expect((await chain.admit({ pod: pod([{ name: 'net.core.somaxconn', value: '1024' }]) })).admit).toBe(
      true,
    );
    expect(await chain.admit({ pod: pod([{ name: 'net.core.somaxconn', value: '8192' }]) })).toMatchObject({
      admit: false,
      reason: 'SysctlForbidden',
      message:
        'forbidden sysctl: "net.core.somaxconn" not allowed by policy: value must be between 128 and 4096',
    });
    const [vap, binding] = f.render();
    expect(vap['metadata']).toMatchObject({ name: 'web-somaxconn' });
    expect(binding['spec']).toMatchObject({
      matchResources: { namespaceSelector: { matchLabels: { tier: 'web' } } },
    });

    const both = sysctl.parseSysctlPolicyFile(
      `${header}spec:\n  includeSafeSysctls: true\n  kernelVersion: "6.1"\n  allowedSysctls: ["net.*"]\n`,
    );
    expect(both.admitChain().handlers).toEqual(['sysctl', 'sysctl-policy']);
  });

  it('refuses bad files with typed errors naming the field', () => {
    const bad = (spec: string) => () => sysctl.parseSysctlPolicyFile(`${header}spec:\n${spec}`, 'f.yaml');
    expect(bad('  sysctls: [{name: a.b, min: "1"}]')).toThrow(
      'f.yaml: spec.sysctls[0].min must be an integer, got string',
    );
    expect(bad('  sysctls: [{name: a.b, mn: 1}]')).toThrow('spec.sysctls[0].mn is not a known field');
    expect(bad('  sysctls: [{name: a.B}]')).toThrow(/spec.sysctls\[0\].name must match/);
    expect(bad('  sysctls: [{name: a.b, min: 9, max: 1}]')).toThrow(
      'spec.sysctls[0]: min 9 is greater than max 1',
    );
    expect(bad('  sysctls: []\n  allowedSysctls: []')).toThrow(/both sysctls and allowedSysctls/);
    expect(bad('  workloadKinds: [Pod]\n  sysctls: []')).toThrow(/spec.workloadKinds\[0\] must be one of/);
    expect(bad('  allowedUnsafeSysctls: [vm.swappiness]')).toThrow(/not known to be namespaced/);
    expect(bad('  {}')).toThrow(/no rule/);
    expect(() => sysctl.parseSysctlPolicyFile('a: [')).toThrow(sysctl.SysctlPolicyFileError);
    try {
      bad('  sysctls: [{name: a.b, fields: []}]')();
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(sysctl.SysctlPolicyFileError);
      expect(e).toMatchObject({ code: 'ERR_KUBENODE_INVALID_ARG', path: 'spec.sysctls[0].fields' });
    }
  });

  it('renders validationActions into the binding (default Deny), refused as the API server refuses them', () => {
    const file = (actions: string) =>
      sysctl.parseSysctlPolicyFile(
        `${header}spec:\n  allowedSysctls: [net.core.somaxconn]\n${actions}`,
        'f.yaml',
      );
    const actionsOf = (f: sysctl.SysctlPolicyFile, o?: sysctl.RenderAdmissionPolicyOptions) =>
      (f.render(o)[1]['spec'] as { validationActions: string[] }).validationActions;
    expect(actionsOf(file(''))).toEqual(['Deny']);
    expect(actionsOf(file('  validationActions: [Warn, Audit]\n'))).toEqual(['Warn', 'Audit']);
    expect(actionsOf(file('  validationActions: [Audit]\n'), { validationActions: ['Deny'] })).toEqual([
      'Deny',
    ]);
    const bad = (actions: string) => () => file(`  validationActions: ${actions}\n`);
    expect(bad('[Deny, Warn]')).toThrow(
      'f.yaml: spec.validationActions: Invalid value: ["Deny","Warn"]: must not contain both Deny and Warn ' +
        '(repeating the same validation failure information in the API response and headers serves no purpose)',
    );
    expect(bad('[Audit, Block]')).toThrow(
      'f.yaml: spec.validationActions[1]: Unsupported value: "Block": supported values: "Audit", "Deny", "Warn"',
    );
    expect(bad('[Warn, Warn]')).toThrow('f.yaml: spec.validationActions[1]: Duplicate value: "Warn"');
    expect(bad('[]')).toThrow(
      'f.yaml: spec.validationActions: Required value: at least one validation action is required',
    );
    expect(bad('[1]')).toThrow('f.yaml: spec.validationActions[0] must be of type string, got integer');
    try {
      bad('[deny]')();
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(sysctl.SysctlPolicyFileError);
      expect(e).toMatchObject({ code: 'ERR_KUBENODE_INVALID_ARG', path: 'spec.validationActions' });
    }
    expect(() =>
      sysctl.renderAdmissionPolicy(null, {
        includeSafeSysctls: true,
        validationActions: ['Warn', 'Deny'],
      }),
    ).toThrow(
      /^options.validationActions: Invalid value: \["Warn","Deny"\]: must not contain both Deny and Warn/,
    );
    expect(() =>
      sysctl.renderAdmissionPolicy(null, {
        includeSafeSysctls: true,
        validationActions: [1] as unknown as sysctl.ValidationAction[],
      }),
    ).toThrow(new KubenodeTypeError('options.validationActions[0] must be a string, got 1'));
  });

  it('parses label selectors as kubectl does', () => {
    expect(parseLabelSelector('tier=web, env in (a, b),!legacy,team,x!=y')).toEqual({
      matchLabels: { tier: 'web' },
      matchExpressions: [
        { key: 'env', operator: 'In', values: ['a', 'b'] },
        { key: 'legacy', operator: 'DoesNotExist' },
        { key: 'team', operator: 'Exists' },
        { key: 'x', operator: 'NotIn', values: ['y'] },
      ],
    });
    expect(() => parseLabelSelector('a=b,a=c')).toThrow(/conflicting/);
    // Keys named like Object.prototype members are ordinary keys, not conflicts.
    expect(parseLabelSelector('constructor=a,toString=b,toString=b')).toEqual({
      matchLabels: { constructor: 'a', toString: 'b' },
    });
    expect(() => parseLabelSelector('a=b c')).toThrow(/invalid/);
  });
});

describe('kubenode sysctl policy render', () => {
  it('prints the policy and binding as YAML or JSON', () => {
    const y = run(['sysctl', 'policy', 'render', '--policy', join(root, 'examples', 'sysctl-policy.yaml')]);
    expect(y.code).toBe(0);
    const docs = y.stdout.split(/^---$/m).map((d) => parse(d));
    expect(docs.map((d) => d.kind)).toEqual([
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ]);
    const j = run([
      'sysctl',
      'policy',
      'render',
      '--policy',
      join(root, 'examples', 'sysctl-policy.yaml'),
      '--namespace-selector',
      'tier in (web,api)',
      '--workload-kinds',
      'Job',
      '-o',
      'json',
    ]);
    expect(j.code).toBe(0);
    const list = JSON.parse(j.stdout);
    expect(list.items[1].spec.matchResources.namespaceSelector).toEqual({
      matchExpressions: [{ key: 'tier', operator: 'In', values: ['web', 'api'] }],
    });
    expect(list.items[0].spec.matchConstraints.resourceRules[1].resources).toEqual(['jobs']);
  });

  it('exits 2 with the message for a bad file, selector or format', () => {
    const bad = file(`${header}spec:\n  sysctls: [{name: a.b, values: ["1"], min: 1}]\n`);
    const r = run(['sysctl', 'policy', 'render', '--policy', bad]);
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr).toContain(`${bad}: spec.sysctls[0]: set either values or min/max or fields`);
    expect(run(['sysctl', 'policy', 'render', '--policy', join(dir, 'missing.yaml')]).code).toBe(2);
    const good = join(root, 'examples', 'sysctl-policy.yaml');
    expect(run(['sysctl', 'policy', 'render', '--policy', good, '--namespace-selector', 'a=b c']).code).toBe(
      2,
    );
    expect(run(['sysctl', 'policy', 'render', '--policy', good, '--workload-kinds', 'Pod']).code).toBe(2);
    expect(run(['sysctl', 'policy', 'render', '--policy', good, '-o', 'text']).code).toBe(2);
  });

  it('refuses an oversized file, a duplicate key and an alias bomb with exit 2; a large file stays fast', async () => {
    const policyHead = `${header}spec:\n  sysctls: [{name: net.core.somaxconn, min: 128}]\n`;
    const labels = (n: number) =>
      `${policyHead}  namespaceSelector:\n    matchLabels:\n${Array.from({ length: n }, (_, i) => `      k${i}: v\n`).join('')}`;
    // Above the 3 MiB the pod files have: refused unread.
    let big = labels(1);
    big += `#${'x'.repeat(3 * 1024 * 1024 + 1 - big.length)}\n`;
    const bigFile = file(big);
    const tooBig = run(['sysctl', 'policy', 'render', '--policy', bigFile]);
    expect(tooBig).toMatchObject({ code: 2, stdout: '' });
    expect(tooBig.stderr).toContain('Request entity too large: limit is 3145728');
    await expect(sysctl.loadSysctlPolicyFile(bigFile)).rejects.toMatchObject({
      name: 'SysctlPolicyFileError',
      code: 'ERR_KUBENODE_INVALID_ARG',
      message: `${bigFile}: Request entity too large: limit is 3145728 (the API server's request body limit)`,
    });
    // 60,000 label keys (0.9 MB): the duplicate-key check is linear (the quadratic one took minutes).
    const start = performance.now();
    const large = run(['sysctl', 'policy', 'render', '--policy', file(labels(60_000)), '-o', 'json']);
    const ms = performance.now() - start;
    expect(large.code, large.stderr).toBe(0);
    expect(
      Object.keys(JSON.parse(large.stdout).items[1].spec.matchResources.namespaceSelector.matchLabels),
    ).toHaveLength(60_000);
    // Generous for a loaded 2-core machine.
    expect(ms).toBeLessThan(40_000);
    const dup = run([
      'sysctl',
      'policy',
      'render',
      '--policy',
      file(`${policyHead}  workloadKinds: [Job]\n  workloadKinds: [Job]\n`),
    ]);
    expect(dup).toMatchObject({ code: 2, stdout: '' });
    expect(dup.stderr).toContain('malformed YAML: mapping key "workloadKinds" already defined');
    // Each level refers ten times to the one before: 10^12 nodes once expanded.
    let bomb = `${policyHead}  allowedUnsafeSysctls: &l0 [a, a, a, a, a, a, a, a, a, a]\n`;
    for (let i = 1; i <= 12; i++)
      bomb += `x${i}: &l${i} [${Array(10)
        .fill(`*l${i - 1}`)
        .join(', ')}]\n`;
    const boom = run(['sysctl', 'policy', 'render', '--policy', file(bomb)]);
    expect(boom).toMatchObject({ code: 2, stdout: '' });
    expect(boom.stderr).toContain('malformed YAML: Excessive alias count');
    expect(() => sysctl.parseSysctlPolicyFile(bomb, 'bomb.yaml')).toThrow(
      expect.objectContaining({ name: 'SysctlPolicyFileError', code: 'ERR_KUBENODE_PARSE' }),
    );
  });

  it("refuses a policy whose CEL would pass the API server's expression limit, naming the limit", () => {
    const entries = (n: number) =>
      Array.from(
        { length: n },
        (_, i) => `    - {name: net.ipv4.conf.eth${i}.rp_filter, min: 0, max: 2}\n`,
      ).join('');
    const r = run([
      'sysctl',
      'policy',
      'render',
      '--policy',
      file(`${header}spec:\n  sysctls:\n${entries(400)}`),
    ]);
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr).toMatch(
      /policy too large for the API server: its CEL variable "policyDenied" passes the API server's limit of 100000 characters per expression/,
    );
    const big = new sysctl.SysctlPolicy(
      Array.from({ length: 400 }, (_, i) => ({ name: `net.ipv4.conf.eth${i}.rp_filter`, min: 0 })),
    );
    expect(() => sysctl.renderAdmissionPolicy(big)).toThrow(KubenodeRangeError);
    // 190 entries fit (the applied policy is checked in policy-apiserver.test.ts).
    expect(
      run(['sysctl', 'policy', 'render', '--policy', file(`${header}spec:\n  sysctls:\n${entries(190)}`)])
        .code,
    ).toBe(0);
  });

  it('prints the schema', () => {
    const r = run(['sysctl', 'policy', 'schema']);
    expect(JSON.parse(r.stdout)).toEqual(
      JSON.parse(readFileSync(join(root, 'schemas', 'sysctl-policy.schema.json'), 'utf8')),
    );
  });
});
