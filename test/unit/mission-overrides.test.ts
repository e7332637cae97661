import { describe, expect, it } from 'vitest';
import { applyMissionOverrides, expandOperationId } from '../../src/shared/contracts/mission-overrides.js';
import { UhError } from '../../src/shared/errors.js';

const SHA = '0123456789abcdef0123456789abcdef01234567';
const doc = { mission_id: 'lint', operation_id: 'fixed', repository: { url: '.', ref: 'main' } };

describe('mission overrides and the operation_id template', () => {
  it('expands {name} and {name:N}; ref characters become id characters', () => {
    const values = { mission_id: 'lint', sha: SHA, run_id: '42', run_attempt: '3', ref: 'refs/heads/main' };
    expect(expandOperationId('{mission_id}-{sha:12}-{run_id}-{run_attempt}', values, 'm.yaml')).toBe(
      'lint-0123456789ab-42-3',
    );
    expect(expandOperationId('x-{ref}', values, 'm.yaml')).toBe('x-refs-heads-main');
  });

  it('an unknown or unset placeholder is refused naming operation_id and where the value comes from', () => {
    const refused = (template: string) => {
      try {
        expandOperationId(template, { mission_id: 'lint' }, 'm.yaml');
      } catch (error) {
        return UhError.isInstance(error) ? [error.kind, ...error.details] : [];
      }
      return [];
    };
    expect(refused('{nope}')).toEqual([
      'invalid_input',
      expect.stringMatching(/^operation_id: unknown placeholder \{nope\}/),
    ]);
    expect(refused('{run_id}')).toEqual([
      'invalid_input',
      'operation_id: {run_id} has no value (GITHUB_RUN_ID is not set)',
    ]);
  });

  it('--ref, --repository and --operation-id replace the file; a 40-hex ref is {sha}', () => {
    const out = applyMissionOverrides(
      doc,
      {
        ref: SHA,
        repository: 'https://example.org/r.git',
        operationId: '{mission_id}-{sha:7}',
        vars: { sha: 'f'.repeat(40) },
      },
      'm.yaml',
    );
    expect(out).toEqual({
      mission_id: 'lint',
      operation_id: 'lint-0123456',
      repository: { url: 'https://example.org/r.git', ref: SHA },
    });
  });

  it('without a 40-hex ref {sha} is the run variable; a file without a template is left alone', () => {
    const templated = { ...doc, operation_id: '{mission_id}-{sha:8}-{run_id}' };
    expect(applyMissionOverrides(templated, { vars: { sha: SHA, run_id: '9' } }, 'm')).toMatchObject({
      operation_id: 'lint-01234567-9',
    });
    expect(applyMissionOverrides(doc, { vars: { sha: SHA } }, 'm')).toEqual(doc);
  });
});
