/**
 * Harbor's `task.toml`, read by a complete TOML parser (smol-toml: TOML 1.0, small, no
 * dependencies) and checked with zod for the fields uh uses. A syntax error names the file, line
 * and column; a field of the wrong type names the field. Tables and keys uh does not use pass.
 */
import { parse, TomlError } from 'smol-toml';
import { z } from 'zod';
import { invalidInput } from '../../shared/errors.js';

const timeout = z.number().positive().optional();
const TaskToml = z.looseObject({
  version: z.string().optional(),
  agent: z.looseObject({ timeout_sec: timeout }).optional(),
  verifier: z.looseObject({ timeout_sec: timeout }).optional(),
  environment: z.looseObject({ docker_image: z.string().optional() }).optional(),
});
export type TaskToml = z.infer<typeof TaskToml>;

export function parseTaskToml(text: string, where: string): TaskToml {
  let raw: unknown;
  try {
    raw = parse(text);
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    const first = error.message.split('\n')[0];
    throw invalidInput(`${where}:${error.line}:${error.column}: ${first}`);
  }
  const parsed = TaskToml.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw invalidInput(`${where}: ${issue?.path.join('.') || '(top)'}: ${issue?.message ?? 'invalid'}`);
}
