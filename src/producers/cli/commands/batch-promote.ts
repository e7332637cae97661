/**
 * `uh batch promote <batch_id> --runtime <id> [--trial k]`: promote the chosen child of a batch
 * (the operation `<batch_id>.<runtime>`) exactly as `uh mission promote` would.
 */
import { EXIT } from '../../../shared/contracts/exit-codes.js';
import { invalidInput } from '../../../shared/errors.js';
import { readBatchRecord } from '../../batch.js';
import type { UhConfig } from '../../../shared/config.js';
import { helpText, parseCommand, resolveStateDir, type CommandSpec } from '../cli-kit.js';
import { MISSION_PROMOTE, missionPromote, normalizePushArg } from './mission-promote.js';

const BATCH_PROMOTE: CommandSpec = {
  usage:
    'uh batch promote <batch_id> --runtime <id> [--trial k] [--branch name] [--push [remote]] [--allow-unverified] [--json] [--state-dir dir]',
  summary:
    "Promote one batch child (the runtime you pick after comparing) to a branch: uh mission promote on that child's operation.",
  options: { ...MISSION_PROMOTE.options, runtime: { type: 'string' }, trial: { type: 'string' } },
  details: [
    "--trial k (1-based) picks among several operations of the same runtime; every other option is uh mission promote's.",
  ],
  examples: ['uh batch report fix-login-001', 'uh batch promote fix-login-001 --runtime codex --push'],
};

/** The operation id of the chosen child. */
export function chooseChild(
  operations: ReadonlyArray<{ runtime: string; operation_id: string }>,
  runtime: string,
  trial: string | undefined,
  batchId: string,
): string {
  const matching = operations.filter((o) => o.runtime === runtime);
  if (matching.length === 0) {
    throw invalidInput(
      `--runtime: batch ${batchId} has no runtime "${runtime}" (it has ${[...new Set(operations.map((o) => o.runtime))].join(', ')})`,
    );
  }
  const k = trial === undefined ? (matching.length === 1 ? 1 : NaN) : Number(trial);
  if (trial === undefined && Number.isNaN(k))
    throw invalidInput(
      `--trial: batch ${batchId} ran ${runtime} ${matching.length} times; pick one with --trial 1..${matching.length}`,
    );
  if (!Number.isInteger(k) || k < 1 || k > matching.length)
    throw invalidInput(`--trial: "${trial}" must be a whole number from 1 to ${matching.length}`);
  return (matching[k - 1] as { operation_id: string }).operation_id;
}

/** The arguments for uh mission promote: without the batch id, --runtime and --trial. */
function promoteArgs(argv: readonly string[]): string[] {
  const takesValue = (name: string) => (BATCH_PROMOTE.options[name] as { type: string } | undefined)?.type === 'string';
  const rest: string[] = [];
  let positionalSeen = false;
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i] as string;
    const name = token.startsWith('--') ? (token.slice(2).split('=')[0] ?? '') : '';
    const dropped = name === 'runtime' || name === 'trial';
    const value = name !== '' && !token.includes('=') && takesValue(name) ? [argv[++i] as string] : [];
    if (!token.startsWith('-') && !positionalSeen) positionalSeen = true;
    else if (!dropped) rest.push(token, ...value);
  }
  return rest;
}

export async function batchPromote(argv: string[], config: UhConfig): Promise<number> {
  const normalized = normalizePushArg(argv);
  const { values, positionals } = parseCommand(BATCH_PROMOTE, normalized);
  if (values.help) return (void process.stdout.write(`${helpText(BATCH_PROMOTE)}\n`), EXIT.ok);
  if (positionals.length !== 1) throw invalidInput('uh batch promote needs one batch id', [], BATCH_PROMOTE.usage);
  if (values.runtime === undefined)
    throw invalidInput('--runtime: required (which child to promote)', [], BATCH_PROMOTE.usage);
  const batchId = positionals[0] as string;
  const record = readBatchRecord(resolveStateDir(values['state-dir'] as string | undefined, config), batchId);
  const operationId = chooseChild(
    record.operations,
    values.runtime as string,
    values.trial as string | undefined,
    batchId,
  );
  // Hand the rest to uh mission promote: drop the batch id, --runtime and --trial.
  return missionPromote([operationId, ...promoteArgs(normalized)], config);
}
