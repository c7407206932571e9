// The subset of JSON Schema the policy file schema uses (type, enum, properties, required,
// additionalProperties, items, minItems, minLength, maxLength, pattern), so the committed schema
// is the one the loader enforces. Returns the first violation with its path.

type Schema = Readonly<Record<string, unknown>>;

export interface SchemaViolation {
  /** `spec.sysctls[0].min` style path ('' for the document). */
  path: string;
  message: string;
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function at(path: string, key: string | number): string {
  return typeof key === 'number' ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`;
}

export function checkSchema(schema: Schema, v: unknown, path = ''): SchemaViolation | null {
  const fail = (message: string) => ({ path, message });
  const t = typeOf(v);
  if (schema['enum'] !== undefined) {
    const allowed = schema['enum'] as readonly unknown[];
    if (!allowed.includes(v))
      return fail(`must be one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}`);
  }
  const want = schema['type'] as string | undefined;
  if (want !== undefined && t !== want && !(want === 'number' && t === 'integer')) {
    return fail(`must be ${want === 'integer' ? 'an integer' : `of type ${want}`}, got ${t}`);
  }
  if (t === 'string') {
    const s = v as string;
    if (typeof schema['minLength'] === 'number' && s.length < schema['minLength'])
      return fail(`must have at least ${schema['minLength']} characters`);
    if (typeof schema['maxLength'] === 'number' && s.length > schema['maxLength'])
      return fail(`must have at most ${schema['maxLength']} characters`);
    if (typeof schema['pattern'] === 'string' && !new RegExp(schema['pattern']).test(s))
      return fail(`must match ${schema['pattern']}`);
  }
  if (t === 'array') {
    const a = v as unknown[];
    if (typeof schema['minItems'] === 'number' && a.length < schema['minItems'])
      return fail(`must have at least ${schema['minItems']} items`);
    const items = schema['items'] as Schema | undefined;
    for (let i = 0; items && i < a.length; i++) {
      const r = checkSchema(items, a[i], at(path, i));
      if (r) return r;
    }
  }
  if (t === 'object') {
    const o = v as Record<string, unknown>;
    for (const k of (schema['required'] as readonly string[] | undefined) ?? []) {
      if (o[k] === undefined) return { path: at(path, k), message: 'is required' };
    }
    const props = (schema['properties'] as Record<string, Schema> | undefined) ?? {};
    const extra = schema['additionalProperties'] as Schema | false | undefined;
    for (const [k, val] of Object.entries(o)) {
      const sub = Object.hasOwn(props, k) ? props[k] : extra;
      if (sub === false) return { path: at(path, k), message: 'is not a known field' };
      if (sub) {
        const r = checkSchema(sub, val, at(path, k));
        if (r) return r;
      }
    }
  }
  return null;
}
