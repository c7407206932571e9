// Rendered sysctl admission policies in a real kube-apiserver (v1.36, ValidatingAdmissionPolicy
// GA): allow and deny with the kubelet-style message, the namespace selector, workload
// templates, and a differential run where every random pod's API decision must equal the
// in-process one. KUBENODE_SYSCTL_DIFF_CASES sets the number of random pods (default 2,000;
// `npm run bench -- sysctl-policy` runs 10,000).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sysctl } from '../../ts/index.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { Api, messageOf, pod } from './support/admission.js';
import { objectFor, runDifferential } from './support/differential.js';

let server: ApiServer;
let api: Api;

beforeAll(async () => {
  server = await startApiServer();
  api = new Api(server);
  const v = await api.send('GET', '/apis/admissionregistration.k8s.io/v1');
  const kinds = (v.body['resources'] as { kind: string }[]).map((r) => r.kind);
  expect(kinds).toContain('ValidatingAdmissionPolicy');
});

afterAll(async () => {
  api?.close();
  await server?.stop();
});

const denied = (policy: string) =>
  `ValidatingAdmissionPolicy '${policy}' with binding '${policy}-binding' denied request: `;

/** Applies a rendered policy and waits until a pod it must refuse is refused. */
async function enforce(
  rendered: sysctl.RenderedAdmissionPolicy,
  ns: string,
  refused: unknown,
): Promise<void> {
  await api.applyPolicy(rendered);
  await api.until('the policy to be enforced', async () => (await api.dryRun(ns, refused)).status === 403);
}

describe('rendered policies in the API server', () => {
  it('enforces the README example: somaxconn 128-4096 in namespaces labelled tier=web', async () => {
    await api.namespace('web', { tier: 'web' });
    await api.namespace('batch', { tier: 'batch' });
    const file = await sysctl.loadSysctlPolicyFile('examples/sysctl-policy.yaml');
    const big = pod('big', [{ name: 'net.core.somaxconn', value: '8192' }]);
    await enforce(file.render(), 'web', big);

    const r = await api.dryRun('web', big);
    expect(r.status).toBe(403);
    const local = await file.admitChain().admit({ pod: big });
    expect(local.message).toBe(
      'forbidden sysctl: "net.core.somaxconn" not allowed by policy: value must be between 128 and 4096',
    );
    expect(messageOf(r)).toBe(`pods "big" is forbidden: ${denied('web-somaxconn')}${local.message}`);

    expect((await api.dryRun('web', pod('ok', [{ name: 'net.core.somaxconn', value: '1024' }]))).status).toBe(
      201,
    );
    expect(
      (await api.dryRun('web', pod('slash', [{ name: 'net/core/somaxconn', value: ' 4096 ' }]))).status,
    ).toBe(201);
    expect(messageOf(await api.dryRun('web', pod('other', [{ name: 'kernel.sem', value: '1' }])))).toContain(
      'forbidden sysctl: "kernel.sem" not allowed by policy',
    );
    expect((await api.dryRun('web', pod('none', []))).status).toBe(201);
    // Outside the selector the policy does not apply.
    expect((await api.dryRun('batch', big)).status).toBe(201);

    // Workload templates are refused at apply time.
    const c = { sysctls: [{ name: 'net.core.somaxconn', value: '99' }], hostNetwork: false, hostIPC: false };
    for (const kind of ['Deployment', 'CronJob'] as const) {
      const { obj, collection, group } = objectFor({ ...c, kind }, `w-${kind.toLowerCase()}`);
      const w = await api.dryRun('web', obj, collection, group);
      expect(w.status).toBe(403);
      expect(messageOf(w)).toContain(
        '"net.core.somaxconn" not allowed by policy: value must be between 128 and 4096',
      );
      const ok = objectFor(
        { ...c, sysctls: [{ name: 'net.core.somaxconn', value: '256' }], kind },
        `ok-${kind}`.toLowerCase(),
      );
      expect((await api.dryRun('web', ok.obj, ok.collection, ok.group)).status).toBe(201);
    }
    await api.deletePolicy('web-somaxconn');
  });

  it('enforces the kubelet allowlist with its messages, and ranges per field', async () => {
    await api.namespace('kubelet', { case: 'kubelet' });
    const policy = new sysctl.SysctlPolicy([
      {
        name: 'net.ipv4.ip_local_port_range',
        fields: [
          { min: 1024, max: 65535 },
          { min: 1024, max: 65535 },
        ],
      },
      { name: 'net.*.*', values: ['1'] },
      { name: 'kernel.shm_rmid_forced' },
    ]);
    const rendered = sysctl.renderAdmissionPolicy(policy, {
      name: 'kubelet',
      includeSafeSysctls: true,
      allowedUnsafeSysctls: ['net.core.somaxconn'],
      kernelVersion: '6.1',
      namespaceSelector: { matchLabels: { case: 'kubelet' } },
    });
    const chain = new (await import('../../ts/admission/index.js')).PodAdmitChain([
      sysctl.kubeletAllowlist({
        includeSafeSysctls: true,
        allowedUnsafeSysctls: ['net.core.somaxconn'],
        kernelVersion: '6.1',
      })!,
      policy,
    ]);
    const sem = pod('sem', [{ name: 'kernel.sem', value: '1' }]);
    await enforce(rendered, 'kubelet', sem);
    const cases: [string, string, boolean][] = [
      ['kernel.sem', '1', false], // not allowlisted (kubelet), and not in the policy
      ['net.core.somaxconn', '1', true], // allowed unsafe + net.*.* value 1
      ['net.core.somaxconn', '2', false], // policy value
      ['net.ipv4.ip_local_port_range', '1024 65535', true],
      ['net.ipv4.ip_local_port_range', '1024\t80', false],
      ['net.ipv4.ip_local_port_range', '1024', false],
      ['kernel.shm_rmid_forced', 'anything', true],
      ['net.ipv4.tcp_syncookies', '1', true],
    ];
    for (const [k, [name, value, admit]] of cases.entries()) {
      const p = pod(`p${k}`, [{ name, value }]);
      const local = await chain.admit({ pod: p });
      const r = await api.dryRun('kubelet', p);
      expect({ name, value, status: r.status }).toEqual({ name, value, status: admit ? 201 : 403 });
      expect(local.admit).toBe(admit);
      if (!admit)
        expect(messageOf(r)).toBe(
          `pods "${p['metadata'] && (p['metadata'] as { name: string }).name}" is forbidden: ${denied('kubelet')}${local.message}`,
        );
    }
    expect(messageOf(await api.dryRun('kubelet', sem))).toContain(
      'forbidden sysctl: "kernel.sem" not allowlisted',
    );
    // hostNetwork with a Net sysctl: API validation refuses it before admission; so does ours.
    const hn = pod('hn', [{ name: 'net.ipv4.tcp_syncookies', value: '1' }], { hostNetwork: true });
    expect((await api.dryRun('kubelet', hn)).status).toBe(422);
    expect(sysctl.validatePodSysctls(hn)).toHaveLength(1);
    expect((await chain.admit({ pod: hn })).message).toBe(
      'forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled',
    );
    await api.deletePolicy('kubelet');
  });

  it('enforces the host user-namespace rule of a user.* allowlist entry (v1.37)', async () => {
    await api.namespace('userns', { case: 'userns' });
    const options = { allowedUnsafeSysctls: ['user.*'], kernelVersion: '6.1' };
    const rendered = sysctl.renderAdmissionPolicy(new sysctl.SysctlNamePolicy(['*']), {
      name: 'userns',
      ...options,
      namespaceSelector: { matchLabels: { case: 'userns' } },
    });
    const allowlist = sysctl.kubeletAllowlist(options)!;
    const sysctls = [{ name: 'user.max_user_namespaces', value: '10' }];
    const host = pod('host', sysctls);
    await enforce(rendered, 'userns', host);
    for (const [k, spec] of [{}, { hostUsers: true }, { hostUsers: false }].entries()) {
      const p = pod(`u${k}`, sysctls, spec);
      const local = allowlist.admit({ pod: p });
      const r = await api.dryRun('userns', p);
      expect({ spec, status: r.status }).toEqual({ spec, status: local.admit ? 201 : 403 });
      expect(local.admit).toBe(spec.hostUsers === false);
      if (!local.admit) {
        expect(messageOf(r)).toBe(`pods "u${k}" is forbidden: ${denied('userns')}${local.message}`);
        expect(local.message).toBe(
          'forbidden sysctl: "user.max_user_namespaces" not allowed with host User enabled',
        );
      }
    }
    await api.deletePolicy('userns');
  });

  it('keeps long values within the CEL cost budget by refusing them early, as the node does', async () => {
    await api.namespace('long', { case: 'long' });
    const policy = new sysctl.SysctlPolicy([{ name: 'net.ipv4.conf.*.rp_filter', min: 0, max: 2 }]);
    const rendered = sysctl.renderAdmissionPolicy(policy, {
      name: 'long',
      namespaceSelector: { matchLabels: { case: 'long' } },
    });
    await enforce(rendered, 'long', pod('probe', [{ name: 'net.ipv4.conf.all.rp_filter', value: '3' }]));
    // 100 values of 10,000 characters: each regex would be charged by length, over the budget.
    const p = pod(
      'long',
      Array.from({ length: 100 }, (_, i) => ({
        name: `net.ipv4.conf.eth${i}.rp_filter`,
        value: `1${' '.repeat(9999)}`,
      })),
    );
    const local = await policy.admit({ pod: p });
    expect(local.message).toBe(
      'forbidden sysctl: "net.ipv4.conf.eth0.rp_filter" not allowed by policy: value must be at most 4096 characters',
    );
    const r = await api.dryRun('long', p);
    expect(messageOf(r)).toBe(`pods "long" is forbidden: ${denied('long')}${local.message}`);
    const fine = pod('fine', [{ name: 'net.ipv4.conf.eth0.rp_filter', value: `1${' '.repeat(4095)}` }]);
    expect((await api.dryRun('long', fine)).status).toBe(201);
    await api.deletePolicy('long');
  });

  it('a policy of 190 range entries stays within the CEL limits, applies and decides as the node does', async () => {
    await api.namespace('large', { case: 'large' });
    // One entry per interface, then a wildcard the earlier entries shadow (first match decides).
    const entries: sysctl.SysctlPolicyEntry[] = Array.from({ length: 190 }, (_, i) => ({
      name: `net.ipv4.conf.eth${i}.rp_filter`,
      min: i % 3,
      max: (i % 3) + 1,
    }));
    entries.push({ name: 'net.ipv4.conf.*.rp_filter', values: ['0'] });
    const policy = new sysctl.SysctlPolicy(entries);
    const rendered = sysctl.renderAdmissionPolicy(policy, {
      name: 'large',
      namespaceSelector: { matchLabels: { case: 'large' } },
    });
    const spec = rendered[0]['spec'] as { variables: { expression: string }[] };
    for (const v of spec.variables) {
      expect(v.expression.length).toBeLessThanOrEqual(sysctl.MAX_CEL_EXPRESSION_CODE_POINTS);
    }
    const refused = pod('first', [{ name: 'net.ipv4.conf.eth0.rp_filter', value: '5' }]);
    await enforce(rendered, 'large', refused);
    const cases: [string, string, boolean][] = [
      ['net.ipv4.conf.eth0.rp_filter', '0', true], // 0–1
      ['net.ipv4.conf.eth0.rp_filter', '2', false],
      ['net.ipv4.conf.eth100.rp_filter', '2', true], // 1–2
      ['net.ipv4.conf.eth189.rp_filter', '0', true], // 0–1, the last ranged entry
      ['net.ipv4.conf.eth189.rp_filter', '3', false],
      ['net.ipv4.conf.eth189.rp_filter', 'x', false],
      ['net.ipv4.conf.eth190.rp_filter', '0', true], // the wildcard: values [0]
      ['net.ipv4.conf.eth190.rp_filter', '1', false],
      ['net.ipv4.conf.all.rp_filter', '0', true],
      ['kernel.sem', '1', false], // no entry matches
    ];
    for (const [k, [name, value, admit]] of cases.entries()) {
      const p = pod(`c${k}`, [{ name, value }]);
      const local = policy.admit({ pod: p });
      expect({ name, value, admit: local.admit }).toEqual({ name, value, admit });
      const r = await api.dryRun('large', p);
      expect({ name, value, status: r.status }).toEqual({ name, value, status: admit ? 201 : 403 });
      if (!admit) expect(messageOf(r)).toBe(`pods "c${k}" is forbidden: ${denied('large')}${local.message}`);
    }
    await api.deletePolicy('large');
  });

  it('decides every random pod as the in-process chain does', { timeout: 600_000 }, async () => {
    const cases = Number(process.env['KUBENODE_SYSCTL_DIFF_CASES'] ?? 2000);
    const r = await runDifferential(api, { cases, policies: 12, seed: 20261124, prefix: 'diff' });
    console.log(
      `sysctl policy differential: ${r.cases} cases over ${r.policies} policies in ${(r.ms / 1000).toFixed(1)} s: ` +
        `${r.allowed} allowed, ${r.deniedByPolicy} denied by the policy, ${r.deniedByValidation} by API validation, ` +
        `${r.disagreements.length} disagreements`,
    );
    expect(r.disagreements.slice(0, 5)).toEqual([]);
    expect(r.cases).toBe(cases);
    expect(r.allowed).toBeGreaterThan(cases / 10);
    expect(r.deniedByPolicy).toBeGreaterThan(cases / 10);
  });
});
