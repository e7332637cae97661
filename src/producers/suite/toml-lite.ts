/**
 * The TOML that Harbor's `task.toml` uses, and no more: `[table]` / `[a.b]` headers, `key = value`
 * with basic or literal strings, numbers, booleans and (possibly multi-line) arrays of those,
 * `#` comments. Anything else is refused with its line number, never guessed.
 */
import { invalidInput } from '../../shared/errors.js';

export type TomlValue = string | number | boolean | TomlValue[];
export type TomlTable = { [key: string]: TomlValue | TomlTable };

function stripComment(line: string): string {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i += 1) {
    const ch = line[i];
    if (quote) {
      if (ch === '\\' && quote === '"') i += 1;
      else if (ch === quote) quote = null;
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '#') return line.slice(0, i);
  }
  return line;
}

function parseScalar(text: string, where: string): TomlValue {
  const t = text.trim();
  if (t.startsWith('[')) {
    const inner = t.slice(1, t.lastIndexOf(']')).trim();
    if (inner === '') return [];
    return splitTop(inner)
      .filter((part) => part.trim() !== '')
      .map((part) => parseScalar(part, where));
  }
  if (t.startsWith('"""') || t.startsWith("'''")) throw invalidInput(`${where}: multi-line strings are not supported`);
  if (t.startsWith('"')) return JSON.parse(t) as string;
  if (t.startsWith("'") && t.endsWith("'")) return t.slice(1, -1);
  if (t === 'true' || t === 'false') return t === 'true';
  const n = Number(t.replace(/_/g, ''));
  if (t !== '' && Number.isFinite(n)) return n;
  throw invalidInput(`${where}: cannot read the value ${JSON.stringify(t.slice(0, 40))}`);
}

/** Split at top-level commas (outside strings and brackets). */
function splitTop(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let start = 0;
  for (let i = 0; i < text.length; i += 1) {
    const ch = text[i];
    if (quote) {
      if (ch === '\\' && quote === '"') i += 1;
      else if (ch === quote) quote = null;
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '[') depth += 1;
    else if (ch === ']') depth -= 1;
    else if (ch === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

const balance = (s: string) => (s.match(/\[/g)?.length ?? 0) - (s.match(/\]/g)?.length ?? 0);

export function parseToml(text: string, source: string): TomlTable {
  const root: TomlTable = {};
  let table = root;
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i += 1) {
    let line = stripComment(lines[i] ?? '').trim();
    const where = `${source}:${i + 1}`;
    if (line === '') continue;
    const header = /^\[([A-Za-z0-9_.-]+)\]$/.exec(line);
    if (header) {
      table = root;
      for (const part of (header[1] as string).split('.')) {
        const next = (table[part] ??= {});
        if (typeof next !== 'object' || Array.isArray(next))
          throw invalidInput(`${where}: [${header[1]}] redefines a value`);
        table = next;
      }
      continue;
    }
    const eq = line.indexOf('=');
    if (eq < 1) throw invalidInput(`${where}: expected key = value or [table]`);
    const key = line
      .slice(0, eq)
      .trim()
      .replace(/^"(.*)"$/, '$1');
    while (balance(line) > 0 && i + 1 < lines.length) line += ` ${stripComment(lines[(i += 1)] ?? '').trim()}`;
    table[key] = parseScalar(line.slice(eq + 1), where);
  }
  return root;
}
