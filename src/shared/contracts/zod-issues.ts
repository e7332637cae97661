import type { z } from 'zod';
import { invalidInput } from '../errors.js';

/** `scope.allowed_change_globs[2]` from zod's path array. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out === '' ? '(root)' : out;
}

/** One line per problem, each naming the path at fault. */
export function formatIssues(error: z.ZodError, prefix = ''): string[] {
  const lines: string[] = [];
  for (const issue of error.issues) {
    const base = [...issue.path];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        lines.push(`${prefix}${formatPath([...base, key])}: unknown key`);
      }
      continue;
    }
    lines.push(`${prefix}${formatPath(base)}: ${issue.message}`);
  }
  return lines;
}

/** Parse with a schema or throw one invalid-input error listing every problem. */
export function parseOrThrow<T extends z.ZodType>(schema: T, value: unknown, what: string, prefix = ''): z.infer<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const details = formatIssues(result.error, prefix);
  throw invalidInput(`invalid ${what}: ${details.length} problem${details.length === 1 ? '' : 's'}`, details);
}
