// Rolling a sysctl policy out on a real kube-apiserver (with an audit log): Warn lets a refused
// pod in with a warning header, Audit with an audit annotation, Deny refuses it; then
// `kubenode sysctl policy audit` lists what is already in the cluster that a policy refuses,
// following continue tokens one small page at a time.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sysctl } from '../../ts/index.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { Api, messageOf, pod } from './support/admission.js';
import { objectFor } from './support/differential.js';

const main = join(import.meta.dirname, '..', '..', 'ts', 'cli', 'main.ts');
const tsx = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'tsx');
const dir = mkdtempSync(join(tmpdir(), 'kubenode-rollout-'));
const auditLog = join(dir, 'audit.log');
let server: ApiServer;
let api: Api;

beforeAll(async () => {
  const auditPolicy = join(dir, 'audit-policy.yaml');
  writeFileSync(
    auditPolicy,
    'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\n' +
      'rules:\n  - level: Metadata\n    verbs: [create]\n    resources: [{group: "", resources: [pods]}]\n  - level: None\n',
  );
  server = await startApiServer({
    extraArgs: [
      `--audit-policy-file=${auditPolicy}`,
      `--audit-log-path=${auditLog}`,
      '--audit-log-mode=blocking',
    ],
  });
  api = new Api(server);
});

afterAll(async () => {
  api?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const SOMAXCONN = 'sysctls: [{name: net.core.somaxconn, min: 128, max: 4096}]';
const MESSAGE =
  'forbidden sysctl: "net.core.somaxconn" not allowed by policy: value must be between 128 and 4096';

/** A policy file of the somaxconn rule for namespaces labelled `rollout=<name>`. */
function policyFile(name: string, actions?: string, extra = ''): string {
  return (
    `apiVersion: kubenode.io/v1alpha1\nkind: SysctlPolicy\nmetadata: {name: ${name}}\nspec:\n  ${SOMAXCONN}\n` +
    `  namespaceSelector: {matchLabels: {rollout: ${name}}}\n` +
    (actions === undefined ? '' : `  validationActions: [${actions}]\n`) +
    extra
  );
}

const big = (name: string) => pod(name, [{ name: 'net.core.somaxconn', value: '8192' }]);
const create = (ns: string, obj: unknown) => api.send('POST', `/api/v1/namespaces/${ns}/pods`, obj);

interface AuditEvent {
  objectRef?: { name?: string; namespace?: string };
  annotations?: Record<string, string>;
  responseStatus?: { code?: number };
}

function auditEvents(): AuditEvent[] {
  if (!existsSync(auditLog)) return [];
  return readFileSync(auditLog, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as AuditEvent);
}

describe('validationActions on the API server', () => {
  it('Warn: a refused pod is created, with the message in a Warning header', async () => {
    await api.namespace('rollout-warn', { rollout: 'rollout-warn' });
    const file = sysctl.parseSysctlPolicyFile(policyFile('rollout-warn', 'Warn'));
    await api.applyPolicy(file.render());
    await api.until(
      'the Warn policy to be enforced',
      async () => (await api.dryRun('rollout-warn', big('probe'))).warnings.length > 0,
    );
    const r = await create('rollout-warn', big('warned'));
    expect(r.status).toBe(201);
    expect(r.warnings).toEqual([
      `299 - "Validation failed for ValidatingAdmissionPolicy 'rollout-warn' with binding 'rollout-warn-binding': ${MESSAGE.replaceAll('"', '\\"')}"`,
    ]);
    const ok = await create('rollout-warn', pod('fine', [{ name: 'net.core.somaxconn', value: '1024' }]));
    expect(ok.status).toBe(201);
    expect(ok.warnings).toEqual([]);
    await api.deletePolicy('rollout-warn');
  });

  it('Audit: a refused pod is created, and its audit event carries the validation failure', async () => {
    await api.namespace('rollout-audit', { rollout: 'rollout-audit' });
    const file = sysctl.parseSysctlPolicyFile(policyFile('rollout-audit', 'Audit'));
    await api.applyPolicy(file.render());
    const failure = (name: string) =>
      auditEvents().find(
        (e) =>
          e.objectRef?.namespace === 'rollout-audit' &&
          e.objectRef.name === name &&
          e.annotations?.['validation.policy.admission.k8s.io/validation_failure'] !== undefined,
      );
    let probes = 0;
    await api.until('the Audit policy to be enforced', async () => {
      const name = `probe-${probes++}`;
      await api.dryRun('rollout-audit', big(name));
      return failure(name) !== undefined;
    });
    const r = await create('rollout-audit', big('audited'));
    expect(r.status).toBe(201);
    expect(r.warnings).toEqual([]);
    await api.until('the audit event', async () => failure('audited') !== undefined, 10_000);
    const event = failure('audited') as AuditEvent;
    expect(event.responseStatus?.code).toBe(201);
    expect(
      JSON.parse(event.annotations?.['validation.policy.admission.k8s.io/validation_failure'] ?? ''),
    ).toEqual([
      {
        message: MESSAGE,
        policy: 'rollout-audit',
        binding: 'rollout-audit-binding',
        expressionIndex: 0,
        validationActions: ['Audit'],
      },
    ]);
    await api.deletePolicy('rollout-audit');
  });

  it('Deny (the default): a refused pod is refused with the message', async () => {
    await api.namespace('rollout-deny', { rollout: 'rollout-deny' });
    const file = sysctl.parseSysctlPolicyFile(policyFile('rollout-deny'));
    expect((file.render()[1]['spec'] as { validationActions: string[] }).validationActions).toEqual(['Deny']);
    await api.applyPolicy(file.render());
    await api.until(
      'the Deny policy to be enforced',
      async () => (await api.dryRun('rollout-deny', big('probe'))).status === 403,
    );
    const r = await create('rollout-deny', big('denied'));
    expect(r.status).toBe(403);
    expect(messageOf(r)).toBe(
      `pods "denied" is forbidden: ValidatingAdmissionPolicy 'rollout-deny' with binding 'rollout-deny-binding' denied request: ${MESSAGE}`,
    );
    await api.deletePolicy('rollout-deny');
  });

  it('the API server takes every action set the renderer writes, and refuses Deny with Warn as the file check does', async () => {
    for (const actions of [['Warn'], ['Audit'], ['Warn', 'Audit'], ['Deny', 'Audit']]) {
      const [, binding] = sysctl
        .parseSysctlPolicyFile(policyFile('rollout-actions', actions.join(', ')))
        .render();
      const r = await api.send(
        'POST',
        '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings?dryRun=All',
        binding,
      );
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    const [, binding] = sysctl.parseSysctlPolicyFile(policyFile('rollout-actions')).render();
    const r = await api.send(
      'POST',
      '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings?dryRun=All',
      { ...binding, spec: { ...(binding['spec'] as object), validationActions: ['Deny', 'Warn'] } },
    );
    expect(r.status).toBe(422);
    const ours = sysctl.validationActionsErrors(['Deny', 'Warn'], 'spec.validationActions');
    expect(messageOf(r)).toContain(ours[0]);
  });
});

// Each run starts the CLI under tsx, several seconds on a busy machine.
const CLI_TIMEOUT = 300_000;

function run(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(tsx, [main, ...args], { encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('kubenode sysctl policy audit', () => {
  it(
    'lists every pod and template the policy refuses, in selected namespaces, page by page',
    async () => {
      await api.namespace('audit-web', { rollout: 'audit-web' });
      await api.namespace('audit-other', {});
      const bad = {
        sysctls: [{ name: 'net.core.somaxconn', value: '99' }],
        hostNetwork: false,
        hostIPC: false,
      };
      const good = { ...bad, sysctls: [{ name: 'net.core.somaxconn', value: '256' }] };
      for (const [ns, name, c, kind] of [
        ['audit-web', 'bad-a', bad, 'Pod'],
        ['audit-web', 'bad-b', bad, 'Pod'],
        ['audit-web', 'good-a', good, 'Pod'],
        ['audit-web', 'good-b', good, 'Pod'],
        ['audit-web', 'bad-deploy', bad, 'Deployment'],
        ['audit-web', 'good-deploy', good, 'Deployment'],
        ['audit-web', 'bad-cron', bad, 'CronJob'],
        ['audit-other', 'bad-elsewhere', bad, 'Pod'],
      ] as const) {
        const { obj, collection, group } = objectFor({ ...c, kind }, name);
        const r = await api.send('POST', `${group}/namespaces/${ns}/${collection}`, obj);
        expect(r.status, JSON.stringify(r.body)).toBe(201);
      }
      const policy = join(dir, 'audit-web.yaml');
      writeFileSync(policy, policyFile('audit-web', 'Warn, Audit'));
      const detail =
        'forbidden sysctl: "net.core.somaxconn" not allowed by policy: value must be between 128 and 4096';

      const text = run([
        'sysctl',
        'policy',
        'audit',
        '--policy',
        policy,
        '--kubeconfig',
        server.kubeconfigFile,
        '--chunk-size',
        '1',
      ]);
      expect(text.stderr).toBe('');
      expect(text.code).toBe(1);
      expect(text.stdout).toBe(
        [
          `REFUSED Pod audit-web/bad-a: ${detail}`,
          `REFUSED Pod audit-web/bad-b: ${detail}`,
          `REFUSED Deployment audit-web/bad-deploy: ${detail}`,
          `REFUSED CronJob audit-web/bad-cron: ${detail}`,
          '4 of 7 objects refused by policy audit-web',
          '',
        ].join('\n'),
      );

      const json = run([
        'sysctl',
        'policy',
        'audit',
        '--policy',
        policy,
        '--kubeconfig',
        server.kubeconfigFile,
        '-o',
        'json',
      ]);
      expect(json.code).toBe(1);
      const listed = JSON.parse(json.stdout) as {
        policy: string;
        scanned: number;
        refused: sysctl.AuditFinding[];
      };
      expect(listed.scanned).toBe(7);
      expect(listed.refused.map((f) => `${f.kind} ${f.namespace}/${f.name} ${f.handler}`)).toEqual([
        'Pod audit-web/bad-a sysctl-policy',
        'Pod audit-web/bad-b sysctl-policy',
        'Deployment audit-web/bad-deploy sysctl-policy',
        'CronJob audit-web/bad-cron sysctl-policy',
      ]);

      // Without a selector every namespace counts; the library reports its pages.
      const everywhere = sysctl.parseSysctlPolicyFile(
        `apiVersion: kubenode.io/v1alpha1\nkind: SysctlPolicy\nmetadata: {name: all}\nspec:\n  ${SOMAXCONN}\n`,
      );
      const found: string[] = [];
      const summary = await sysctl.auditSysctlPolicy(server.kubeConfig, everywhere, {
        chunkSize: 2,
        onFinding: (f) => found.push(`${f.namespace}/${f.name}`),
      });
      // Pods of the tests above are in other namespaces.
      expect(found.filter((f) => f.startsWith('audit-'))).toEqual([
        'audit-other/bad-elsewhere',
        'audit-web/bad-a',
        'audit-web/bad-b',
        'audit-web/bad-deploy',
        'audit-web/bad-cron',
      ]);
      expect(summary.refused).toBe(found.length);
      // One page per two objects of each kind (at least one per kind): continue tokens were followed.
      expect(summary.pages).toBeGreaterThanOrEqual(Math.ceil(summary.scanned / 2));
    },
    CLI_TIMEOUT,
  );

  it(
    'exits 0 when nothing is refused, 2 for bad input, 1 when the API server is unreachable',
    async () => {
      const none = join(dir, 'none.yaml');
      writeFileSync(none, policyFile('nothing-here'));
      const ok = run(['sysctl', 'policy', 'audit', '--policy', none, '--kubeconfig', server.kubeconfigFile]);
      expect(ok).toMatchObject({ code: 0, stdout: '0 of 0 objects refused by policy nothing-here\n' });

      const chunk = run([
        'sysctl',
        'policy',
        'audit',
        '--policy',
        none,
        '--kubeconfig',
        server.kubeconfigFile,
        '--chunk-size',
        '0',
      ]);
      expect(chunk.code).toBe(2);
      expect(chunk.stderr).toContain('--chunk-size must be a positive integer, got "0"');
      const missing = run([
        'sysctl',
        'policy',
        'audit',
        '--policy',
        join(dir, 'nope.yaml'),
        '--kubeconfig',
        server.kubeconfigFile,
      ]);
      expect(missing.code).toBe(2);
      const kc = run(['sysctl', 'policy', 'audit', '--policy', none, '--kubeconfig', join(dir, 'nope')]);
      expect(kc.code).toBe(2);
      expect(kc.stderr).toContain('cannot load kubeconfig');
      const format = run([
        'sysctl',
        'policy',
        'audit',
        '--policy',
        none,
        '--kubeconfig',
        server.kubeconfigFile,
        '-o',
        'xml',
      ]);
      expect(format.code).toBe(2);

      const down = join(dir, 'down.kubeconfig');
      const config = JSON.parse(readFileSync(server.kubeconfigFile, 'utf8')) as {
        clusters: { cluster: { server: string } }[];
      };
      for (const c of config.clusters) c.cluster.server = 'https://127.0.0.1:1';
      writeFileSync(down, JSON.stringify(config));
      const unreachable = run(['sysctl', 'policy', 'audit', '--policy', none, '--kubeconfig', down]);
      expect(unreachable.code).toBe(1);
      expect(unreachable.stderr).toContain('cannot list namespaces');
    },
    CLI_TIMEOUT,
  );
});
