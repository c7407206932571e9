// Reads the sysctl settings of a KubeletConfiguration file (YAML or JSON): the
// `allowedUnsafeSysctls` list, `featureGates` and `defaultPodSysctls`. Other fields are ignored.
import { readFile } from 'node:fs/promises';
import { describe, KubenodeError, KubenodeTypeError } from '../errors.js';
import { yaml } from '../yaml-lazy.js';
import type { KubeletSysctlConfig } from './config.js';

/** A kubelet configuration file that cannot be read or parsed, or has a field of the wrong type. */
export class KubeletConfigFileError extends KubenodeError {
  constructor(
    code: 'ERR_KUBENODE_IO' | 'ERR_KUBENODE_PARSE' | 'ERR_KUBENODE_INVALID_ARG',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.name = 'KubeletConfigFileError';
  }
}

const KIND = 'KubeletConfiguration';

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The sysctl settings of one parsed KubeletConfiguration document. */
export function kubeletSysctlConfig(doc: unknown, source = 'kubelet config'): KubeletSysctlConfig {
  const bad = (what: string) => new KubeletConfigFileError('ERR_KUBENODE_INVALID_ARG', `${source}: ${what}`);
  if (!isObject(doc)) throw bad(`not a ${KIND} object`);
  if (doc['kind'] !== undefined && doc['kind'] !== KIND) {
    throw bad(`kind is ${JSON.stringify(doc['kind'])}, want ${KIND}`);
  }
  const out: KubeletSysctlConfig = {};
  const unsafe = doc['allowedUnsafeSysctls'];
  if (unsafe !== undefined && unsafe !== null) {
    if (!Array.isArray(unsafe) || !unsafe.every((u) => typeof u === 'string')) {
      throw bad(`allowedUnsafeSysctls must be a list of strings, got ${describe(unsafe)}`);
    }
    out.allowedUnsafeSysctls = unsafe as string[];
  }
  const gates = doc['featureGates'];
  if (gates !== undefined && gates !== null) {
    if (!isObject(gates) || !Object.values(gates).every((g) => typeof g === 'boolean')) {
      throw bad(`featureGates must map names to booleans, got ${describe(gates)}`);
    }
    out.featureGates = gates as Record<string, boolean>;
  }
  const defaults = doc['defaultPodSysctls'];
  if (defaults !== undefined && defaults !== null) {
    // map[string]string: a YAML number (`net.ipv4.ip_forward: 1`) does not decode.
    if (!isObject(defaults))
      throw bad(`defaultPodSysctls must map names to strings, got ${describe(defaults)}`);
    for (const [k, v] of Object.entries(defaults)) {
      if (typeof v !== 'string') {
        throw bad(`defaultPodSysctls[${JSON.stringify(k)}] must be a string (quote it), got ${describe(v)}`);
      }
    }
    out.defaultPodSysctls = defaults as Record<string, string>;
  }
  return out;
}

/** Parses a KubeletConfiguration (one YAML or JSON document) into its sysctl settings. */
export function parseKubeletSysctlConfig(text: string, source = 'kubelet config'): KubeletSysctlConfig {
  if (typeof text !== 'string') throw new KubenodeTypeError(`text must be a string, got ${describe(text)}`);
  const docs = yaml().parseAllDocuments(text);
  const list = Array.isArray(docs) ? docs.filter((d) => d.contents !== null) : [];
  if (list.length !== 1) {
    throw new KubeletConfigFileError(
      'ERR_KUBENODE_PARSE',
      `${source}: expected one YAML document, found ${list.length}`,
    );
  }
  const doc = list[0]!;
  if (doc.errors.length > 0) {
    throw new KubeletConfigFileError(
      'ERR_KUBENODE_PARSE',
      `${source}: malformed YAML: ${doc.errors[0]!.message}`,
    );
  }
  return kubeletSysctlConfig(doc.toJS({ maxAliasCount: 100 }), source);
}

/** Reads a KubeletConfiguration file's sysctl settings. */
export async function loadKubeletSysctlConfig(file: string): Promise<KubeletSysctlConfig> {
  if (typeof file !== 'string') throw new KubenodeTypeError(`file must be a string, got ${describe(file)}`);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new KubeletConfigFileError('ERR_KUBENODE_IO', `cannot read ${file}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  return parseKubeletSysctlConfig(text, file);
}
