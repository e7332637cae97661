import { hostSettingsOf, type UhConfig } from '../../../shared/config.js';
import { terminalText } from '../../../shared/terminal-text.js';
import { loadMissionFile, repositoryPolicy } from '../../../shared/contracts/load-mission.js';
import { EXIT } from '../../../shared/contracts/status.js';
import { createLogger } from '../../../shared/logger.js';
import { invalidInput } from '../../../shared/errors.js';
import { COMMON_OPTIONS, helpText, parseCommand, resolveStateDir, writeJson, type CommandSpec } from '../cli-kit.js';
import { printReceiptSummary, receiptJson } from '../receipt-view.js';
import { reportReceipt, reportRefused, reportUnsettled, resetJunit } from '../../ci/ci-report.js';
import { OVERRIDE_DETAILS, OVERRIDE_OPTIONS, overridesOf } from '../mission-overrides-flags.js';
import type { Mission } from '../../../shared/contracts/mission.js';
import { onInterrupt } from '../interrupts.js';
type RunInline = typeof import('../../../workers/inline/run-inline.js').runInline;

export const MISSION_RUN: CommandSpec = {
  usage:
    'uh mission run <mission.yaml|json> [--runtime id] [--operation-id id|template] [--ref ref] [--repository url] [--json] [--junit path] [--state-dir dir] [--dry-run] [--keep-sandbox]',
  summary:
    'Run a mission inline, in this process, with no Redis: a git worktree of the repository at the base commit, the runtime inside it, diff, scope check, checks, receipt. The user checkout is never touched.',
  options: {
    ...COMMON_OPTIONS,
    ...OVERRIDE_OPTIONS,
    runtime: { type: 'string' },
    'dry-run': { type: 'boolean', default: false },
    'keep-sandbox': { type: 'boolean', default: false },
    junit: { type: 'string' },
  },
  details: [
    'State goes to --state-dir, else $UH_STATE_DIR, else .harness/ at the repository root you run from.',
    'Sandboxes and mirrors live in $UH_CACHE_DIR (default ~/.cache/uh). Ctrl-C cancels (exit 4, receipt written).',
    '--json prints the receipt as one JSON document on stdout. --junit writes one test case per check plus the scope check.',
    'Under GitHub Actions: step outputs to $GITHUB_OUTPUT, a summary to $GITHUB_STEP_SUMMARY, ::error annotations (docs/ci.md).',
    ...OVERRIDE_DETAILS,
  ],
  examples: [
    'uh mission run examples/hello/mission.yaml',
    'uh mission run mission.yaml --runtime codex --json > receipt.json',
    'uh mission run mission.yaml --ref "$GITHUB_SHA" --operation-id "{mission_id}-{sha:12}-{run_id}-{run_attempt}"',
  ],
};

export async function missionRun(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(MISSION_RUN, argv);
  if (values.help) {
    process.stdout.write(`${helpText(MISSION_RUN)}\n`);
    return EXIT.ok;
  }
  if (positionals.length !== 1)
    throw invalidInput('uh mission run needs exactly one mission file', [], 'uh mission run <mission.yaml>');
  const junit = values.junit as string | undefined;
  resetJunit(junit);
  const source = positionals[0] as string;
  let mission: Mission | undefined;
  try {
    mission = loadMissionFile(source, repositoryPolicy(config.core, 'cli'), overridesOf(values, config));
    if (values['dry-run']) return await dryRun(mission, values, config);
    return await runAndReport(mission, values, config);
  } catch (error) {
    reportRefused(config.ci, { source, operationId: mission?.operation_id, junit }, error);
    throw error;
  }
}

type Values = ReturnType<typeof parseCommand>['values'];

/** What would run: the prepared operation and the runtime's launch, nothing executed or written. */
async function dryRun(mission: Mission, values: Values, config: UhConfig): Promise<number> {
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  const runtime = values.runtime as string | undefined;
  const { dryRunView } = await import('../../../operation/prepare-operation.js');
  const { operationPorts } = await import('../../../workers/operation-ports.js');
  const host = hostSettingsOf(config);
  const options = { stateDir, cacheDir: config.core.cacheDir, host, ...(runtime ? { runtime } : {}) };
  const view = await dryRunView(mission, options, operationPorts(config.core));
  if (values.json) writeJson(view);
  else process.stdout.write(`${JSON.stringify(view, null, 2)}\n(dry run: nothing was executed or written)\n`);
  return EXIT.ok;
}

type Promotion = NonNullable<Extract<Awaited<ReturnType<RunInline>>, { kind: 'ran' }>['promotion']>;

function promotionLine(p: Promotion): string {
  if (p.decision !== 'promoted') return `  promotion refused: ${p.reason}\n`;
  const pushed = p.pushed ? `, pushed to ${p.pushed.remote}` : '';
  return `  promoted: branch ${p.branch} (commit ${p.commit})${pushed}${p.reason ? ` (${p.reason})` : ''}\n`;
}

async function runAndReport(mission: Mission, values: Values, config: UhConfig): Promise<number> {
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  const runtime = values.runtime as string | undefined;
  const controller = new AbortController();
  const onSignal = (signal: string) => {
    if (controller.signal.aborted) return;
    process.stderr.write(`uh: ${signal}: cancelling ${mission.operation_id}…\n`);
    controller.abort({ kind: 'cancel', message: `cancelled by ${signal}` });
  };
  const stopListening = onInterrupt(onSignal);
  try {
    return await runUntilSettled(mission, values, config, { stateDir, runtime, signal: controller.signal });
  } finally {
    stopListening();
  }
}

async function runUntilSettled(
  mission: Mission,
  values: Values,
  config: UhConfig,
  run: { stateDir: string; runtime: string | undefined; signal: AbortSignal },
): Promise<number> {
  const { stateDir, runtime } = run;
  if (!values.json)
    process.stderr.write(`uh: running ${mission.operation_id} (${terminalText(mission.title, { oneLine: true })})…\n`);
  const { runInline } = await import('../../../workers/inline/run-inline.js');
  const { compileSettings } = await import('../../../operation/settings.js');
  const settings = compileSettings(config, {
    stateDir,
    logger: createLogger(config.core.logLevel),
    keepSandbox: Boolean(values['keep-sandbox']),
  });
  void settings.limitBackend; // probed now: UH_LIMIT_BACKEND=cgroup with no cgroup here is exit 2 before anything starts
  const outcome = await runInline(mission, { settings, signal: run.signal, ...(runtime ? { runtime } : {}) });
  if (outcome.kind === 'in_progress' || outcome.kind === 'unknown') {
    const message =
      outcome.kind === 'in_progress'
        ? `operation ${mission.operation_id} is already running (pid ${outcome.record.worker?.pid})`
        : `operation ${mission.operation_id} was started but its process is gone: state unknown`;
    if (values.json) writeJson({ operation_id: mission.operation_id, state: outcome.kind, record: outcome.record });
    else process.stderr.write(`uh: ${message}\nhint: uh mission status ${mission.operation_id}\n`);
    reportUnsettled(config.ci, mission.operation_id, outcome.kind, message, values.junit as string | undefined);
    return EXIT.unknown;
  }
  const promotion = outcome.kind === 'ran' ? outcome.promotion : null;
  reportReceipt(outcome.receipt, config.ci, {
    dir: outcome.dir,
    junit: values.junit as string | undefined,
    json: Boolean(values.json),
  });
  if (values.json) writeJson({ ...receiptJson(outcome.receipt, outcome.dir), ...(promotion ? { promotion } : {}) });
  else printReceiptSummary(outcome.receipt, outcome.dir, outcome.kind === 'attached');
  if (promotion && !values.json) process.stdout.write(promotionLine(promotion));
  return outcome.receipt.exit_code;
}
