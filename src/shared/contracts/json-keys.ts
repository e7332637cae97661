/**
 * One linear pass over JSON text that `JSON.parse` already accepted: refuses duplicate keys
 * (JSON.parse keeps the last silently), prototype keys, too many keys and too deep nesting, and
 * names the path at fault. YAML gets the same rules in parse-document.ts.
 */
import { FORBIDDEN_KEYS, LIMITS } from './input-limits.js';
import { formatPath } from './zod-issues.js';

type Frame =
  { kind: 'object'; keys: Set<string>; key: string | null; expectKey: boolean } | { kind: 'array'; index: number };

function pathOf(stack: readonly Frame[]): (string | number)[] {
  return stack
    .map((f) => (f.kind === 'array' ? f.index : (f.key ?? '')))
    .filter((p, i, all) => i < all.length - 1 || p !== '');
}

/** End index (the closing quote) of the string starting at `start`. */
function stringEnd(text: string, start: number): number {
  let j = start + 1;
  while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
  return j;
}

/** Null when every object's keys are unique and allowed; else one line naming the path. */
export function jsonKeyProblem(text: string): string | null {
  const stack: Frame[] = [];
  let keys = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const top = stack[stack.length - 1];
    if (c === '{' || c === '[') {
      if (stack.length >= LIMITS.documentDepth)
        return `${formatPath(pathOf(stack))}: nested deeper than ${LIMITS.documentDepth} levels`;
      stack.push(
        c === '{' ? { kind: 'object', keys: new Set(), key: null, expectKey: true } : { kind: 'array', index: 0 },
      );
    } else if (c === '}' || c === ']') {
      stack.pop();
    } else if (c === ',' && top) {
      if (top.kind === 'array') top.index++;
      else top.expectKey = true;
    } else if (c === '"') {
      const end = stringEnd(text, i);
      if (top?.kind === 'object' && top.expectKey) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        top.key = key;
        top.expectKey = false;
        const at = formatPath(pathOf(stack));
        if (FORBIDDEN_KEYS.has(key)) return `${at}: key "${key}" is not allowed`;
        if (top.keys.has(key)) return `${at}: duplicate key "${key}"`;
        if (++keys > LIMITS.documentKeys) return `${at}: more than ${LIMITS.documentKeys} keys in the document`;
        top.keys.add(key);
      }
      i = end;
    }
  }
  return null;
}
