import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import type { AdapterCheckV1 } from '../runtime/v1/runtime-adapter-v1.js';
import type { CheckContextV1 } from '../runtime/v1/runtime-context.js';

/** Where `program` resolves on PATH, or null. */
export function whichProgram(program: string, env: Readonly<Record<string, string | undefined>>): string | null {
  if (program.includes('/')) {
    return isExecutable(program) ? program : null;
  }
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, program);
    if (isExecutable(candidate)) return candidate;
  }
  return null;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The failed check of a program that is not on PATH (or not executable). */
export function programNotFound(program: string, hint: string): AdapterCheckV1 {
  return {
    ok: false,
    summary: `program not found: ${program}`,
    errors: [`${program} is not on PATH${isAbsolute(program) ? ' (or not executable)' : ''}`],
    hint,
  };
}

/** A check that only asks whether the program exists and is executable. */
export async function checkProgram(program: string, ctx: CheckContextV1): Promise<AdapterCheckV1> {
  const found = whichProgram(program, ctx.env);
  if (found === null)
    return programNotFound(program, `install ${program} or set runtime_config.argv[0] to its full path`);
  return { ok: true, summary: `${program} at ${found}`, errors: [] };
}
