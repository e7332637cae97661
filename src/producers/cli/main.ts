/**
 * `uh`: the command line. Each command module is imported only when it runs, so start-up stays
 * lean (no BullMQ for an inline run).
 */
// First: zod's mode is set before the modules below make their schemas.
import { longRunning } from './zod-mode.js';
import { z } from 'zod';
import { loadConfig, type UhConfig } from '../../shared/config.js';
import { printError, type Handler } from './cli-kit.js';

const COMMANDS: Record<string, Record<string, () => Promise<Handler>>> = {
  mission: {
    run: async () => (await import('./commands/mission-run.js')).missionRun,
    status: async () => (await import('./commands/mission-remote.js')).missionStatusAny,
    collect: async () => (await import('./commands/mission-remote.js')).missionCollectAny,
    list: async () => (await import('./commands/mission-remote.js')).missionListAny,
    submit: async () => (await import('./commands/mission-submit.js')).missionSubmit,
    watch: async () => (await import('./commands/mission-queue.js')).missionWatch,
    cancel: async () => (await import('./commands/mission-queue.js')).missionCancel,
    recover: async () => (await import('./commands/mission-queue.js')).missionRecover,
    promote: async () => (await import('./commands/mission-promote.js')).missionPromote,
  },
  worker: {
    start: async () => (await import('./commands/worker-start.js')).workerStart,
  },
  batch: {
    run: async () => (await import('./commands/batch.js')).batchRun,
    report: async () => (await import('./commands/batch.js')).batchReport,
    compare: async () => (await import('./commands/batch.js')).batchCompare,
    promote: async () => (await import('./commands/batch-promote.js')).batchPromote,
    submit: async () => (await import('./commands/batch-queue.js')).batchSubmit,
    status: async () => (await import('./commands/batch-queue.js')).batchStatus,
    watch: async () => (await import('./commands/batch-queue.js')).batchWatch,
    cancel: async () => (await import('./commands/batch-queue.js')).batchCancel,
  },
  receipt: {
    verify: async () => (await import('./commands/receipt-verify.js')).receiptVerify,
    key: async () => (await import('./commands/receipt-key.js')).receiptKey,
  },
  api: {
    start: async () => (await import('./commands/api-start.js')).apiStart,
  },
  deploy: {
    'redis-acl': async () => (await import('./commands/deploy-redis-acl.js')).deployRedisAcl,
  },
  doctor: {
    '': async () => (await import('./commands/doctor.js')).doctor,
  },
  gc: {
    '': async () => (await import('./commands/gc.js')).gc,
  },
  daemon: {
    start: async () => (await import('./commands/daemon.js')).daemonStart,
    status: async () => (await import('./commands/daemon.js')).daemonStatus,
    stop: async () => (await import('./commands/daemon.js')).daemonStop,
  },
  sandbox: {
    list: async () => (await import('./commands/sandbox.js')).sandboxList,
    enter: async () => (await import('./commands/sandbox.js')).sandboxEnter,
  },
  adapter: {
    list: async () => (await import('./commands/adapter.js')).adapterList,
    add: async () => (await import('./commands/adapter.js')).adapterAdd,
    check: async () => (await import('./commands/adapter.js')).adapterCheck,
    publish: async () => (await import('./commands/adapter.js')).adapterPublish,
  },
};

const TOP_HELP = `uh: run coding-agent missions in git-worktree sandboxes and get verified receipts

usage: uh <group> <command> [options]   (every command takes --help)

  uh mission run <file>            run a mission inline (no Redis); exit code is the verdict
  uh mission status <operation>    show an operation's state and receipt summary
  uh mission collect <operation>   copy receipt, diff and final message to --out
  uh mission list                  list operations in the state dir (or Redis with --redis)
  uh mission submit <file>         enqueue on Redis (--wait for the verdict as exit code)
  uh mission watch <operation>     follow an operation's events live (queue mode)
  uh mission cancel <operation>    cancel a queued or running operation from any host
  uh mission recover <operation>   settle an unknown operation (never re-runs it)
  uh mission promote <operation>   make a verified operation a branch (--push to a remote)
  uh batch run <file> --runtimes a,b [--trials N]     one mission on several runtimes inline, compared
  uh batch submit <file> --runtimes a,b [--trials N]  the same on the queue: one flow, run by the fleet
  uh batch status|watch|cancel <batch>                a queued batch, from any host
  uh batch report <batch> [--format table|md|html|json]  the report of a batch
  uh batch compare <a> <b>                per-runtime pass@1 deltas of two batches
  uh batch promote <batch> --runtime id   make the chosen child a branch (as uh mission promote)
  uh worker start                  run runtime pools (--runtime, --concurrency) or --results
  uh adapter list                  list runtimes and their manifests
  uh adapter add <id>              write .harness/adapters/<id>.yaml from a template
  uh adapter check <id>            is the runtime usable on this machine?
  uh adapter publish <file>        serve a manifest to the whole fleet (stored in Redis)
  uh receipt verify <file>         check a receipt's signature (--public-key k.pub; exit 0 valid, 6 not, 2 bad input)
  uh receipt key --public          print this host's receipt public key (--generate <dir>: a fleet key pair)
  uh api start                     serve queue mode over HTTP (submit, status, artifacts, SSE events)
  uh deploy redis-acl --passwords <dir>   the fleet's Redis ACL file: one user per role (docs/deploy.md)
  uh doctor                        is this machine ready (node, git, dirs, Redis, runtimes)?
  uh gc [--dry-run]                apply the cache retention policy; list what it frees, with sizes
  uh daemon start                  a resident uh: later uh mission run here skip start-up (status, stop)
  uh sandbox list                  the sandboxes kept after failed missions (or UH_KEEP_SANDBOX=1)
  uh sandbox enter <operation>     a shell (or -- command) in a kept sandbox, isolated as a check

exit codes: 0 completed (verified or unverified) · 1 failed, verification failed or scope
violation · 2 invalid input · 3 blocked · 4 cancelled · 5 unknown or wait timed out ·
6 the receipt is unsigned, edited or signed by an unknown key (never reported as verified)

example:
  uh mission run examples/hello/mission.yaml --json`;

/** `uh <group> --help`: the group's commands, as listed in the top help. */
function groupHelp(group: string): string {
  const lines = TOP_HELP.split('\n').filter((l) => l.startsWith(`  uh ${group} `));
  return `usage: uh ${group} <command> [options]   (every command takes --help)\n\n${lines.join('\n')}\n`;
}

/** Runs one command with the configuration parsed once, here, from the environment. */
export async function main(argv: string[], config: UhConfig): Promise<number> {
  const [group, command, ...rest] = argv;
  if (group === undefined || group === '--help' || group === '-h' || group === 'help') {
    process.stdout.write(`${TOP_HELP}\n`);
    return group === undefined ? 2 : 0;
  }
  if (group === '--version') {
    process.stdout.write('uh 0.1.0\n');
    return 0;
  }
  const commands = COMMANDS[group];
  // Single-word commands (`uh doctor`) keep every argument.
  if (commands?.[''] && (command === undefined || command.startsWith('-'))) {
    const handler = await commands['']();
    return handler(argv.slice(1), config, { run: runCommand });
  }
  if (commands && (command === undefined || command === '--help' || command === '-h' || command === 'help')) {
    process.stdout.write(groupHelp(group));
    return command === undefined ? 2 : 0;
  }
  const load = command === undefined ? undefined : commands?.[command];
  if (!commands || !load) {
    const known = commands
      ? Object.keys(commands)
          .map((c) => `uh ${group} ${c}`)
          .join(', ')
      : Object.keys(COMMANDS).join(', ');
    process.stderr.write(
      `uh: unknown command "${[group, command].filter(Boolean).join(' ')}"\nhint: known: ${known}; see uh --help\n`,
    );
    return 2;
  }
  const handler = await load();
  return handler(rest, config, { run: runCommand });
}

/** One command with its configuration parsed from the environment: its exit code (errors printed). */
export async function runCommand(argv: string[]): Promise<number> {
  let config: UhConfig | undefined;
  try {
    config = loadConfig();
    return await main(argv, config);
  } catch (error) {
    return printError(error, argv.includes('--json'), config?.core.debug ?? false);
  }
}

/**
 * The process entry (bin/uh.js): no top-level await, so the same module bundles to CommonJS
 * for the V8 code cache (scripts/bundle.mjs). The exit code is set when the command settles.
 */
export function runCli(argv: string[] = process.argv.slice(2)): Promise<void> {
  // `uh mission list | head -1`: the reader went away; stop quietly instead of an EPIPE stack trace.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
  // zod-mode.ts set the mode from process.argv; a caller's own argv decides for what it makes next.
  z.config({ jitless: !longRunning(argv) });
  return runCommand(argv).then((code) => {
    process.exitCode = code;
  });
}
