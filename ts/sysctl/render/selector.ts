// Label selector strings (`tier=web,env in (a,b),!legacy`) as metav1.LabelSelector objects,
// with the operators kubectl's `-l` accepts that a LabelSelector can express.
import { describe, KubenodeTypeError } from '../../errors.js';
import type { LabelSelector } from './admission-policy.js';

const KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

/** Splits on commas outside parentheses. */
function terms(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out.map((t) => t.trim());
}

export function parseLabelSelector(s: string): LabelSelector {
  if (typeof s !== 'string') throw new KubenodeTypeError(`selector must be a string, got ${describe(s)}`);
  const sel: Required<LabelSelector> = { matchLabels: {}, matchExpressions: [] };
  const bad = (t: string, why: string) =>
    new KubenodeTypeError(`label selector ${JSON.stringify(s)}: ${JSON.stringify(t)}: ${why}`);
  const key = (t: string, k: string) => {
    if (!KEY.test(k)) throw bad(t, `invalid key ${JSON.stringify(k)}`);
    return k;
  };
  const value = (t: string, v: string) => {
    if (!VALUE.test(v) || v.length > 63) throw bad(t, `invalid value ${JSON.stringify(v)}`);
    return v;
  };
  for (const t of terms(s)) {
    if (t === '') throw bad(t, 'empty term');
    let m = /^(\S+?)\s+(in|notin)\s+\(([^()]*)\)$/.exec(t);
    if (m) {
      const values = m[3]!.split(',').map((v) => value(t, v.trim()));
      sel.matchExpressions.push({ key: key(t, m[1]!), operator: m[2] === 'in' ? 'In' : 'NotIn', values });
      continue;
    }
    m = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(t);
    if (m) {
      const k = key(t, m[1]!);
      const v = value(t, m[3]!);
      if (m[2] === '!=') sel.matchExpressions.push({ key: k, operator: 'NotIn', values: [v] });
      else if (Object.hasOwn(sel.matchLabels, k) && sel.matchLabels[k] !== v)
        throw bad(t, `conflicting values for ${k}`);
      else sel.matchLabels[k] = v;
      continue;
    }
    if (t.startsWith('!')) {
      sel.matchExpressions.push({ key: key(t, t.slice(1).trim()), operator: 'DoesNotExist' });
      continue;
    }
    sel.matchExpressions.push({ key: key(t, t), operator: 'Exists' });
  }
  return {
    ...(Object.keys(sel.matchLabels).length > 0 ? { matchLabels: sel.matchLabels } : {}),
    ...(sel.matchExpressions.length > 0 ? { matchExpressions: sel.matchExpressions } : {}),
  };
}

/** Whether `labels` match a metav1.LabelSelector, as the API server evaluates one. */
export function selectorMatches(sel: LabelSelector, labels: Readonly<Record<string, string>> = {}): boolean {
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const inValues = has && (e.values ?? []).includes(labels[e.key] as string);
    if (e.operator === 'In' && !inValues) return false;
    if (e.operator === 'NotIn' && inValues) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}
