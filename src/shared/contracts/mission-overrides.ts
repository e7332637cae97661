/**
 * What a producer may change in a mission document before it is validated: the operation id
 * (`--operation-id`), the ref (`--ref`) and the repository URL (`--repository`), and the
 * operation id template (`{mission_id}-{sha:12}-{run_id}-{run_attempt}`) expanded from the
 * run's variables, so one mission file gives a new operation per push, re-run and retry while
 * the same run attaches (docs/ci.md#operation-ids). Pure: the caller passes the variables.
 */
import { invalidInput } from '../errors.js';

/** The values a template may name; a CI host's run fills them (GITHUB_SHA, GITHUB_RUN_ID, …). */
export interface TemplateVars {
  /** The commit being tested (the PR head or GITHUB_SHA). */
  sha?: string | undefined;
  run_id?: string | undefined;
  run_attempt?: string | undefined;
}

export interface MissionOverrides {
  operationId?: string | undefined;
  ref?: string | undefined;
  repository?: string | undefined;
  vars?: TemplateVars;
}

const PLACEHOLDER = /\{([a-z_]+)(?::(\d+))?\}/g;
const SOURCES: Record<string, string> = {
  sha: 'GITHUB_SHA or a 40-hex --ref',
  run_id: 'GITHUB_RUN_ID',
  run_attempt: 'GITHUB_RUN_ATTEMPT',
  mission_id: 'the mission_id field',
  ref: 'repository.ref',
};

/** A value as id characters (letters, digits, `.`, `_`, `-`): `refs/heads/main` → `refs-heads-main`. */
const idChars = (s: string): string => s.replace(/[^A-Za-z0-9._-]+/g, '-');

/** Expand `{name}` / `{name:N}` (the first N characters); an unknown or empty name is refused naming the field. */
export function expandOperationId(
  template: string,
  values: Record<string, string | undefined>,
  source: string,
): string {
  const problems: string[] = [];
  const out = template.replace(PLACEHOLDER, (whole, name: string, n: string | undefined) => {
    if (!(name in SOURCES)) {
      problems.push(`operation_id: unknown placeholder ${whole} (known: ${Object.keys(SOURCES).join(', ')})`);
      return '';
    }
    const value = values[name];
    if (!value) {
      problems.push(`operation_id: ${whole} has no value (${SOURCES[name]} is not set)`);
      return '';
    }
    return idChars(n === undefined ? value : value.slice(0, Number(n)));
  });
  if (problems.length > 0) throw invalidInput(`invalid ${source}: ${problems.length} problem(s)`, problems);
  return out;
}

const HEX_SHA = /^[0-9a-f]{40}$/i;

/** The document with the overrides applied and its operation id template expanded (before validation). */
export function applyMissionOverrides(doc: unknown, o: MissionOverrides, source: string): unknown {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return doc;
  const out = { ...(doc as Record<string, unknown>) };
  if (o.ref !== undefined || o.repository !== undefined) {
    const repo = out.repository;
    const base = typeof repo === 'object' && repo !== null && !Array.isArray(repo) ? repo : {};
    out.repository = {
      ...base,
      ...(o.repository !== undefined ? { url: o.repository } : {}),
      ...(o.ref !== undefined ? { ref: o.ref } : {}),
    };
  }
  if (o.operationId !== undefined) out.operation_id = o.operationId;
  const id = out.operation_id;
  if (typeof id === 'string' && id.includes('{')) {
    const ref = (out.repository as { ref?: unknown } | undefined)?.ref;
    const refText = typeof ref === 'string' ? ref : undefined;
    out.operation_id = expandOperationId(
      id,
      {
        mission_id: typeof out.mission_id === 'string' ? out.mission_id : undefined,
        ref: refText,
        sha: refText !== undefined && HEX_SHA.test(refText) ? refText : o.vars?.sha,
        run_id: o.vars?.run_id,
        run_attempt: o.vars?.run_attempt,
      },
      source,
    );
  }
  return out;
}
