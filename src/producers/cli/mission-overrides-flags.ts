/**
 * The flags `uh mission run` and `uh mission submit` share to make one mission file a new
 * operation per CI run: `--operation-id` (a literal id or a template), `--ref`, `--repository`;
 * the template's variables come from the CI run (GITHUB_SHA, GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT).
 */
import type { UhConfig } from '../../shared/config.js';
import type { MissionOverrides } from '../../shared/contracts/mission-overrides.js';

export const OVERRIDE_OPTIONS = {
  'operation-id': { type: 'string' as const },
  ref: { type: 'string' as const },
  repository: { type: 'string' as const },
};

export const OVERRIDE_DETAILS = [
  "--operation-id, --ref, --repository replace the file's operation_id, repository.ref and repository.url before",
  'validation. An operation_id (flag or file) may be a template: {mission_id}, {ref}, {sha}, {run_id}, {run_attempt},',
  '{name:N} for the first N characters; {sha} is a 40-hex ref or $GITHUB_SHA, {run_id}/{run_attempt} are',
  '$GITHUB_RUN_ID/$GITHUB_RUN_ATTEMPT (docs/ci.md#operation-ids). --junit is always rewritten, whatever the outcome.',
];

export function overridesOf(values: Record<string, unknown>, config: UhConfig): MissionOverrides {
  const text = (k: string) => (typeof values[k] === 'string' ? (values[k] as string) : undefined);
  return {
    operationId: text('operation-id'),
    ref: text('ref'),
    repository: text('repository'),
    vars: config.ci.run,
  };
}
