// The ServiceCIDR guard: a short file (allowed parent prefixes per family, forbidden prefixes,
// the default ServiceCIDR protected) rendered as a ValidatingAdmissionPolicy + binding, and the
// same decision in process. The rules and their texts live in the native core (kubenode-cidr);
// this module checks the file's shape and translates the rules to CEL.
import type { ServiceCidrGuard as NativeGuard, ServiceCidrGuardTexts } from '../binding.js';
import { assertString, callNative, describe, KubenodeError, KubenodeTypeError } from '../errors.js';
import { native } from '../native.js';
import { InputTooLargeError, MAX_OBJECT_BYTES, readCapped } from '../read-capped.js';
import { anyOf, celList, celString } from '../sysctl/render/cel.js';
import { parseDocuments } from '../yaml-documents.js';

/** `apiVersion` of a guard file. */
export const GUARD_API_VERSION = 'kubenode.io/v1alpha1';
/** `kind` of a guard file. */
export const GUARD_KIND = 'ServiceCIDRGuard';
/** Policy name when the file has no `metadata.name`. */
export const DEFAULT_GUARD_NAME = 'kubenode-servicecidr-guard';

/** A guard file that cannot be read or parsed, or whose content is refused. */
export class ServiceCIDRGuardError extends KubenodeError {
  constructor(
    code: 'ERR_KUBENODE_IO' | 'ERR_KUBENODE_PARSE' | 'ERR_KUBENODE_INVALID_ARG',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.name = 'ServiceCIDRGuardError';
  }
}

/** A guard's `spec` after checking: every list present. */
export interface CheckedGuardSpec extends Required<Omit<ServiceCIDRGuardSpec, 'allowed'>> {
  /** Allowed parent prefixes per family. */
  allowed: Required<ServiceCIDRGuardSpec['allowed']>;
}

/** The `spec` of a guard file. */
export interface ServiceCIDRGuardSpec {
  /** Allowed parent prefixes per family; a family with none admits no ServiceCIDR of it. */
  allowed: {
    /** Allowed IPv4 parent prefixes. */
    ipv4?: string[];
    /** Allowed IPv6 parent prefixes. */
    ipv6?: string[];
  };
  /** Prefixes no ServiceCIDR may overlap (e.g. the node and pod networks). */
  forbidden?: string[];
  /** Only the API server may create, delete or re-address the default ServiceCIDR (default true). */
  protectDefault?: boolean;
}

/** One admission request for a ServiceCIDR, as the guard sees it. */
export interface ServiceCIDRGuardRequest {
  /** The operation. */
  operation: 'CREATE' | 'UPDATE' | 'DELETE';
  /** The ServiceCIDR's name. */
  name: string;
  /** `spec.cidrs` of the object (absent for a delete). */
  cidrs?: readonly string[];
  /** `spec.cidrs` of the stored object (update and delete). */
  oldCidrs?: readonly string[];
  /** The requesting user's name. */
  username: string;
}

const SPEC_KEYS = new Set(['allowed', 'forbidden', 'protectDefault']);

function stringList(v: unknown, path: string): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) {
    throw new ServiceCIDRGuardError(
      'ERR_KUBENODE_INVALID_ARG',
      `${path} must be a list of strings, got ${describe(v)}`,
    );
  }
  return [...v];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A checked guard: render it for the API server, or decide a request in process. */
export class ServiceCIDRGuard {
  readonly #n: NativeGuard;
  /** Name of the rendered policy (the binding is `<name>-binding`). */
  readonly name: string;

  /**
   * @throws ServiceCIDRGuardError (`ERR_KUBENODE_INVALID_ARG`) naming the bad field: a prefix
   * that is malformed, not canonical, of the other family, or no allowed prefix at all.
   */
  constructor(spec: ServiceCIDRGuardSpec, name: string = DEFAULT_GUARD_NAME) {
    if (!isObject(spec))
      throw new ServiceCIDRGuardError(
        'ERR_KUBENODE_INVALID_ARG',
        `spec must be an object, got ${describe(spec)}`,
      );
    for (const k of Object.keys(spec)) {
      if (!SPEC_KEYS.has(k))
        throw new ServiceCIDRGuardError('ERR_KUBENODE_INVALID_ARG', `spec.${k}: unknown field`);
    }
    if (!isObject(spec.allowed)) {
      throw new ServiceCIDRGuardError(
        'ERR_KUBENODE_INVALID_ARG',
        `spec.allowed must be an object with ipv4 and/or ipv6 lists`,
      );
    }
    for (const k of Object.keys(spec.allowed)) {
      if (k !== 'ipv4' && k !== 'ipv6')
        throw new ServiceCIDRGuardError(
          'ERR_KUBENODE_INVALID_ARG',
          `spec.allowed.${k}: unknown field (ipv4 or ipv6)`,
        );
    }
    if (spec.protectDefault !== undefined && typeof spec.protectDefault !== 'boolean') {
      throw new ServiceCIDRGuardError(
        'ERR_KUBENODE_INVALID_ARG',
        `spec.protectDefault must be a boolean, got ${describe(spec.protectDefault)}`,
      );
    }
    if (typeof name !== 'string' || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name) || name.length > 245) {
      throw new ServiceCIDRGuardError(
        'ERR_KUBENODE_INVALID_ARG',
        `name must be a DNS subdomain name, got ${describe(name)}`,
      );
    }
    const config = {
      ipv4: stringList(spec.allowed.ipv4, 'spec.allowed.ipv4'),
      ipv6: stringList(spec.allowed.ipv6, 'spec.allowed.ipv6'),
      forbidden: stringList(spec.forbidden, 'spec.forbidden'),
      protectDefault: spec.protectDefault ?? true,
    };
    try {
      this.#n = callNative(() => new native.ServiceCidrGuard(config));
    } catch (e) {
      throw new ServiceCIDRGuardError('ERR_KUBENODE_INVALID_ARG', `spec.${(e as Error).message}`, {
        cause: e,
      });
    }
    this.name = name;
  }

  /** The checked lists. */
  get spec(): CheckedGuardSpec {
    const c = this.#n.config();
    return {
      allowed: { ipv4: c.ipv4, ipv6: c.ipv6 },
      forbidden: c.forbidden,
      protectDefault: c.protectDefault,
    };
  }

  /**
   * The guard's verdict: null when the request is allowed, else the message the rendered policy
   * refuses it with. The API server's own validation (`validateServiceCIDRSpec`) runs first.
   */
  check(r: ServiceCIDRGuardRequest): string | null {
    if (!isObject(r)) throw new KubenodeTypeError(`request must be an object, got ${describe(r)}`);
    assertString('request.name', r.name);
    assertString('request.username', r.username);
    const list = (v: unknown, what: string) => {
      if (v === undefined) return [];
      if (!Array.isArray(v) || !v.every((x) => typeof x === 'string'))
        throw new KubenodeTypeError(`${what} must be an array of strings`);
      return [...v];
    };
    const cidrs = list(r.cidrs, 'request.cidrs');
    const old = list(r.oldCidrs, 'request.oldCidrs');
    return callNative(() => this.#n.decide(r.operation, r.name, cidrs, old, r.username)) ?? null;
  }

  /**
   * `[ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding]`
   * (admissionregistration.k8s.io/v1), deterministic for one guard.
   */
  render(): [Record<string, unknown>, Record<string, unknown>] {
    const texts: ServiceCidrGuardTexts = native.servicecidrGuardTexts();
    const spec = this.spec;
    const parts = (family: 'IPv4' | 'IPv6') => callNative(() => this.#n.notAllowedParts(family));
    const [b4 = '', a4 = ''] = parts('IPv4');
    const [b6 = '', a6 = ''] = parts('IPv6');
    const inside = (list: string[]) => anyOf(list.map((p) => `cidr(${celString(p)}).containsCIDR(c)`));
    const overlap = (f: string, c: string) =>
      `(cidr(${f}).containsCIDR(${c}) || cidr(${c}).containsCIDR(${f}))`;
    const cidrsOf = (o: string) =>
      `${o} != null && has(${o}.spec) && has(${o}.spec.cidrs) ? ${o}.spec.cidrs : []`;
    const variables = [
      { name: 'apiServer', expression: `request.userInfo.username == ${celString(texts.apiServerUser)}` },
      { name: 'cidrs', expression: cidrsOf('object') },
      { name: 'oldCidrs', expression: cidrsOf('oldObject') },
      {
        name: 'changed',
        expression:
          'request.operation == "CREATE" || (request.operation == "UPDATE" && variables.cidrs != variables.oldCidrs)',
      },
      {
        name: 'defaultRefused',
        expression: spec.protectDefault
          ? `!variables.apiServer && request.name == ${celString(texts.defaultName)} && (variables.changed || request.operation == "DELETE")`
          : 'false',
      },
      // Checked only when the rest passes, so one request fails one validation, with one message.
      {
        name: 'checked',
        expression: '!variables.apiServer && !variables.defaultRefused && variables.changed',
      },
      {
        name: 'notAllowed',
        expression: `variables.cidrs.filter(c, !(cidr(c).ip().family() == 4 ? (${inside(spec.allowed.ipv4)}) : (${inside(spec.allowed.ipv6)})))`,
      },
    ];
    const validations: Record<string, unknown>[] = [];
    if (spec.protectDefault) {
      validations.push({
        expression: '!variables.defaultRefused',
        message: texts.defaultProtected,
        reason: 'Forbidden',
      });
    }
    validations.push({
      expression: '!variables.checked || size(variables.notAllowed) == 0',
      messageExpression:
        `cidr(variables.notAllowed[0]).ip().family() == 4 ? ${celString(b4)} + variables.notAllowed[0] + ${celString(a4)}` +
        ` : ${celString(b6)} + variables.notAllowed[0] + ${celString(a6)}`,
      reason: 'Forbidden',
    });
    if (spec.forbidden.length > 0) {
      const list = celList(spec.forbidden);
      variables.push({
        name: 'overlapping',
        expression: `variables.cidrs.filter(c, ${list}.exists(f, ${overlap('f', 'c')}))`,
      });
      const [fa = '', fb = '', fz = ''] = texts.forbiddenParts;
      validations.push({
        expression:
          '!variables.checked || size(variables.notAllowed) > 0 || size(variables.overlapping) == 0',
        messageExpression:
          `${celString(fa)} + variables.overlapping[0] + ${celString(fb)} + ` +
          `${list}.filter(f, ${overlap('f', 'variables.overlapping[0]')})[0] + ${celString(fz)}`,
        reason: 'Forbidden',
      });
    }
    const labels = { 'app.kubernetes.io/managed-by': 'kubenode' };
    const operations = spec.protectDefault ? ['CREATE', 'UPDATE', 'DELETE'] : ['CREATE', 'UPDATE'];
    return [
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicy',
        metadata: { name: this.name, labels },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: {
            resourceRules: [
              {
                apiGroups: ['networking.k8s.io'],
                apiVersions: ['*'],
                operations,
                resources: ['servicecidrs'],
              },
            ],
          },
          variables,
          validations,
        },
      },
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicyBinding',
        metadata: { name: `${this.name}-binding`, labels },
        spec: { policyName: this.name, validationActions: ['Deny'] },
      },
    ];
  }
}

/**
 * The API server's check of a whole `spec.cidrs` (upstream `validateServiceCIDRSpec`), which
 * runs before admission: its messages, empty when valid.
 */
export function validateServiceCIDRSpec(cidrs: readonly string[]): string[] {
  if (!Array.isArray(cidrs) || !cidrs.every((c) => typeof c === 'string')) {
    throw new KubenodeTypeError('cidrs must be an array of strings');
  }
  return callNative(() => native.servicecidrValidateSpec([...cidrs]));
}

/** Parses a guard file (YAML or JSON, one document). */
export function parseServiceCIDRGuard(text: string, source = 'guard'): ServiceCIDRGuard {
  if (typeof text !== 'string') throw new KubenodeTypeError(`text must be a string, got ${describe(text)}`);
  let docs: unknown[];
  try {
    docs = parseDocuments(text);
  } catch (e) {
    throw new ServiceCIDRGuardError(
      'ERR_KUBENODE_PARSE',
      `${source}: malformed YAML: ${(e as Error).message}`,
      { cause: e },
    );
  }
  if (docs.length !== 1) {
    throw new ServiceCIDRGuardError(
      'ERR_KUBENODE_PARSE',
      `${source}: expected one YAML document, found ${docs.length}`,
    );
  }
  const doc = docs[0];
  if (!isObject(doc))
    throw new ServiceCIDRGuardError('ERR_KUBENODE_INVALID_ARG', `${source}: expected a mapping`);
  for (const k of Object.keys(doc)) {
    if (!['apiVersion', 'kind', 'metadata', 'spec'].includes(k)) {
      throw new ServiceCIDRGuardError('ERR_KUBENODE_INVALID_ARG', `${source}: ${k}: unknown field`);
    }
  }
  if (doc['apiVersion'] !== GUARD_API_VERSION || doc['kind'] !== GUARD_KIND) {
    throw new ServiceCIDRGuardError(
      'ERR_KUBENODE_INVALID_ARG',
      `${source}: expected apiVersion ${GUARD_API_VERSION} and kind ${GUARD_KIND}, got ${describe(doc['apiVersion'])} ${describe(doc['kind'])}`,
    );
  }
  const meta = doc['metadata'];
  if (meta !== undefined && !isObject(meta))
    throw new ServiceCIDRGuardError('ERR_KUBENODE_INVALID_ARG', `${source}: metadata must be a mapping`);
  const name = meta?.['name'] ?? DEFAULT_GUARD_NAME;
  try {
    return new ServiceCIDRGuard(doc['spec'] as ServiceCIDRGuardSpec, name as string);
  } catch (e) {
    if (e instanceof ServiceCIDRGuardError)
      throw new ServiceCIDRGuardError(e.code as 'ERR_KUBENODE_INVALID_ARG', `${source}: ${e.message}`, {
        cause: e,
      });
    throw e;
  }
}

/** Reads (at most `MAX_OBJECT_BYTES`) and checks a guard file. */
export async function loadServiceCIDRGuard(file: string): Promise<ServiceCIDRGuard> {
  assertString('file', file);
  let text: string;
  try {
    text = await readCapped(file, MAX_OBJECT_BYTES);
  } catch (e) {
    if (e instanceof InputTooLargeError)
      throw new ServiceCIDRGuardError('ERR_KUBENODE_INVALID_ARG', `${file}: ${e.message}`, { cause: e });
    throw new ServiceCIDRGuardError('ERR_KUBENODE_IO', `cannot read ${file}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  return parseServiceCIDRGuard(text, file);
}
