// No module of a Rust crate imports one that imports it back: a circle makes the modules one
// unit in all but name (none can be read, tested or moved alone). An edge is any `crate::`,
// `super::` or `self::` path and any `use` of a sibling; a name re-exported by a parent
// (`pub use error::Error` in lib.rs) counts as an edge to the module that defines it. A parent
// naming its own submodules is containment, not an import, and a `#[cfg(test)]` module is a
// leaf that may use anything.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const CRATES = resolve(import.meta.dirname, '../crates');

/**
 * Circles present today, each as `crate: module/module/…` (sorted). An entry that no longer
 * occurs fails the test too: remove it once its circle is broken.
 */
const KNOWN_CIRCLES = new Set<string>([]);

type Module = string; // path from the crate root, `a::b`; '' is the root
interface Edge {
  to: Module;
  at: string; // file:line of the reference
}

function rustFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return rustFiles(p);
    return p.endsWith('.rs') ? [p] : [];
  });
}

/** Module path of a file under src/ by the standard layout (no `#[path]` in the tree). */
function modulePath(src: string, file: string): Module {
  const parts = relative(src, file).replace(/\.rs$/, '').split('/');
  const last = parts[parts.length - 1];
  if (last === 'mod' || (parts.length === 1 && last === 'lib')) parts.pop();
  return parts.join('::');
}

/** Source with comments, strings and char literals blanked (line breaks kept). */
function code(src: string): string {
  const blank = (s: string) => s.replace(/[^\n]/g, ' ');
  let out = '';
  let i = 0;
  while (i < src.length) {
    const rest = src.slice(i);
    const skip = literal(src, i, rest);
    if (skip > 0) {
      out += blank(src.slice(i, i + skip));
      i += skip;
      continue;
    }
    // Whole identifiers, so `br"…"` inside a name is never a raw string.
    const word = rest.match(/^[A-Za-z_]\w*/)?.[0] ?? (src[i] as string);
    out += word;
    i += word.length;
  }
  return out;
}

/** Length of the comment or literal starting at `i`, else 0. */
function literal(src: string, i: number, rest: string): number {
  if (rest.startsWith('//')) {
    const end = src.indexOf('\n', i);
    return (end < 0 ? src.length : end) - i;
  }
  if (rest.startsWith('/*')) {
    let depth = 0;
    let j = i;
    do {
      if (src.startsWith('/*', j)) {
        depth++;
        j += 2;
      } else if (src.startsWith('*/', j)) {
        depth--;
        j += 2;
      } else j++;
    } while (depth > 0 && j < src.length);
    return j - i;
  }
  const raw = rest.match(/^b?r(#*)"/);
  if (raw) {
    const close = `"${raw[1]}`;
    const end = src.indexOf(close, i + raw[0].length);
    return (end < 0 ? src.length : end + close.length) - i;
  }
  const str =
    rest.match(/^b?"(?:[^"\\]|\\[\s\S])*"/) ??
    rest.match(/^b?'(?:[^'\\\n]|\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.))'/);
  return str ? str[0].length : 0;
}

/** The paths a use tree names, `a::{b, c::{d as e}}` → `a::b`, `a::c::d` (alias kept). */
function useTree(tree: string): { path: string[]; alias?: string }[] {
  const t = tree.replace(/\s+as\s+/g, '@').replace(/\s+/g, '');
  const out: { path: string[]; alias?: string }[] = [];
  const walk = (prefix: string[], s: string) => {
    for (const part of splitTop(s)) {
      if (part === '') continue;
      const brace = part.indexOf('{');
      if (brace >= 0) {
        const head = part.slice(0, brace).replace(/::$/, '');
        walk([...prefix, ...(head ? head.split('::') : [])], part.slice(brace + 1, -1));
      } else {
        const [p, alias] = part.split('@');
        out.push({ path: [...prefix, ...(p as string).split('::')], alias });
      }
    }
  };
  walk([], t);
  return out;
}

function splitTop(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '{') depth++;
    else if (s[i] === '}') depth--;
    else if (s[i] === ',' && depth === 0) {
      parts.push(s.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(s.slice(start));
  return parts;
}

interface Ref {
  from: Module; // the module the reference sits in (inline modules included)
  path: string[];
  line: number;
}

interface CrateGraph {
  files: Map<Module, string>; // file module → file
  modules: Set<Module>; // file and inline modules
  tests: Set<Module>; // `#[cfg(test)]` modules: leaves that may use anything
  uses: Map<Module, Map<string, string[]>>; // module → visible name → absolute path
  refs: Map<Module, Ref[]>; // file module → references in it
}

function parseCrate(src: string): CrateGraph {
  const files = new Map<Module, string>();
  const uses = new Map<Module, Map<string, string[]>>();
  const refs = new Map<Module, Ref[]>();
  const children = new Set<Module>();
  const tests = new Set<Module>();
  for (const f of rustFiles(src)) {
    if (relative(src, f).startsWith('bin/') || relative(src, f) === 'main.rs') continue;
    files.set(modulePath(src, f), f);
  }
  const parsed: { file: Module; items: Ref[]; useItems: (Ref & { alias?: string })[] }[] = [];
  for (const [file, path] of files) {
    const text = code(readFileSync(path, 'utf8')).replace(/pub\s*\(\s*in\s[^)]*\)/g, '');
    const lineAt = (pos: number) => text.slice(0, pos).split('\n').length;
    const stack: { name: string; depth: number }[] = [];
    let depth = 0;
    const here = () => [file, ...stack.map((s) => s.name)].filter(Boolean).join('::');
    const items: Ref[] = [];
    const useItems: (Ref & { alias?: string })[] = [];
    const token =
      /\bmod\s+(?:r#)?(\w+)\s*([;{])|\buse\s+([^;]*);|\b((?:crate|super|self)(?:\s*::\s*[A-Za-z_]\w*)+)|[{}]/g;
    for (const m of text.matchAll(token)) {
      const at = m.index ?? 0;
      if (m[1] !== undefined) {
        const child = [here(), m[1]].filter(Boolean).join('::');
        children.add(child);
        if (
          /#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?$/.test(
            text.slice(Math.max(0, at - 200), at),
          )
        )
          tests.add(child);
        if (m[2] === '{') stack.push({ name: m[1], depth: depth++ });
      } else if (m[3] !== undefined) {
        for (const u of useTree(m[3]))
          useItems.push({ from: here(), path: u.path, line: lineAt(at), alias: u.alias });
      } else if (m[4] !== undefined) {
        // `$crate::` in a macro counts as written where the macro is.
        items.push({ from: here(), path: m[4].split('::').map((x) => x.trim()), line: lineAt(at) });
      } else if (m[0] === '{') depth++;
      else if (m[0] === '}') {
        depth--;
        if (stack.length && stack[stack.length - 1]?.depth === depth) stack.pop();
      }
    }
    parsed.push({ file, items, useItems });
  }
  const modules = new Set([...files.keys(), ...children]);
  for (const p of parsed) {
    for (const u of p.useItems) {
      const abs = absolute(modules, u.from, u.path);
      if (!abs) continue;
      const last = abs[abs.length - 1] as string;
      const name = u.alias ?? (last === 'self' ? (abs[abs.length - 2] as string) : last);
      if (name === '*') continue;
      const table = uses.get(u.from) ?? new Map<string, string[]>();
      table.set(name, last === 'self' ? abs.slice(0, -1) : abs);
      uses.set(u.from, table);
    }
    refs.set(p.file, [...p.items, ...p.useItems]);
  }
  return { files, modules, tests, uses, refs };
}

/** Absolute form of a path written in module `from`; null for extern crates and std. */
function absolute(modules: Set<Module>, from: Module, path: string[]): string[] | null {
  let mod = from === '' ? [] : from.split('::');
  let i = 0;
  if (path[0] === 'crate') {
    mod = [];
    i = 1;
  } else if (path[0] === 'self') i = 1;
  else if (path[0] === 'super') {
    while (path[i] === 'super') {
      mod = mod.slice(0, -1);
      i++;
    }
  } else if (!modules.has([...mod, path[0]].join('::'))) return null;
  return [...mod, ...path.slice(i)];
}

/** The file module that defines what an absolute path names, following re-exports. */
function target(g: CrateGraph, abs: string[], seen = 0): Module {
  const isFile = (m: string[]) => m.length === 0 || g.files.has(m.join('::'));
  let i = 0;
  let mod: string[] = [];
  while (i < abs.length && g.modules.has([...mod, abs[i]].join('::'))) mod = [...mod, abs[i++] as string];
  const name = abs[i];
  const reexport = name === undefined ? undefined : g.uses.get(mod.join('::'))?.get(name);
  if (reexport && seen < 8 && reexport.join('::') !== abs.join('::'))
    return target(g, [...reexport, ...abs.slice(i + 1)], seen + 1);
  while (!isFile(mod)) mod = mod.slice(0, -1);
  return mod.join('::');
}

function edges(g: CrateGraph): Map<Module, Edge[]> {
  const out = new Map<Module, Edge[]>();
  for (const [file, rs] of g.refs) {
    const list: Edge[] = [];
    for (const r of rs) {
      if ([...g.tests].some((t) => r.from === t || r.from.startsWith(`${t}::`))) continue;
      const abs = absolute(g.modules, r.from, r.path);
      if (!abs) continue;
      const to = target(g, abs);
      // A module's own items and its submodules are not imports.
      if (to === file || (file === '' ? true : to.startsWith(`${file}::`))) continue;
      list.push({ to, at: `${relative(CRATES, g.files.get(file) ?? '')}:${r.line}` });
    }
    out.set(file, list);
  }
  return out;
}

/** Strongly connected components with more than one module (Tarjan). */
function circles(graph: Map<Module, Edge[]>): Module[][] {
  let index = 0;
  const idx = new Map<Module, number>();
  const low = new Map<Module, number>();
  const stack: Module[] = [];
  const on = new Set<Module>();
  const found: Module[][] = [];
  const visit = (v: Module) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const { to } of graph.get(v) ?? []) {
      if (!idx.has(to)) {
        visit(to);
        low.set(v, Math.min(low.get(v) as number, low.get(to) as number));
      } else if (on.has(to)) low.set(v, Math.min(low.get(v) as number, idx.get(to) as number));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: Module[] = [];
      let w: Module;
      do {
        w = stack.pop() as Module;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) found.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return found;
}

function crates(): string[] {
  return readdirSync(CRATES).filter((c) => existsSync(join(CRATES, c, 'src')));
}

interface Found {
  name: string; // `crate: a/b/c`
  detail: string; // the edges inside the circle, with where each is written
}

function crateCircles(crate: string): Found[] {
  const g = parseCrate(join(CRATES, crate, 'src'));
  const graph = edges(g);
  return circles(graph).map((scc) => {
    const inside = new Set(scc);
    const lines = scc.flatMap((m) => {
      const first = new Map<Module, string>();
      for (const e of graph.get(m) ?? []) if (inside.has(e.to) && !first.has(e.to)) first.set(e.to, e.at);
      return [...first].map(([to, at]) => `  ${m || '(root)'} -> ${to} (${at})`);
    });
    return { name: `${crate}: ${scc.join('/')}`, detail: lines.join('\n') };
  });
}

describe('Rust module graph', () => {
  it('reads the references (conntrack validate.rs uses stale.rs; lib.rs re-exports resolve)', () => {
    const g = parseCrate(join(CRATES, 'kubenode-conntrack/src'));
    const validate = edges(g).get('validate') ?? [];
    expect(validate.map((e) => e.to)).toContain('stale');
    expect(target(g, ['Error'])).toBe('error');
  });

  it('has no circle between the modules of a crate', () => {
    const found = crates().flatMap(crateCircles);
    const names = new Set(found.map((f) => f.name));
    const report = [
      ...found.filter((f) => !KNOWN_CIRCLES.has(f.name)).map((f) => `circle ${f.name}\n${f.detail}`),
      ...[...KNOWN_CIRCLES]
        .filter((k) => !names.has(k))
        .map((k) => `KNOWN_CIRCLES lists "${k}", which no longer occurs: remove the entry`),
    ];
    expect(report.join('\n\n')).toBe('');
  });
});
