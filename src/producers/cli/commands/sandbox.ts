/**
 * `uh sandbox list` and `uh sandbox enter <operation|name> [-- command…]`: the sandboxes uh kept
 * (a failed mission's, or every one with UH_KEEP_SANDBOX=1), and a shell or a command in one.
 * An overlay sandbox's path is empty on the host; enter mounts its files read-only there, in a
 * namespace of the command's own (src/workers/sandbox/kept-sandboxes.ts).
 */
import type { UhConfig } from '../../../shared/config.js';
import { EXIT } from '../../../shared/contracts/status.js';
import { invalidInput } from '../../../shared/errors.js';
import { enterKept, keptSandboxes } from '../../../workers/sandbox/kept-sandboxes.js';
import { helpText, parseCommand, resolveStateDir, writeJson, type CommandSpec } from '../cli-kit.js';

const HELP = { type: 'boolean' as const, short: 'h', default: false };

const LIST: CommandSpec = {
  usage: 'uh sandbox list [--json]',
  summary: 'The sandboxes this cache keeps, newest first: operation, backend, until when, path.',
  options: { json: { type: 'boolean', default: false }, help: HELP },
  details: [
    'A sandbox is kept when its mission fails, or always with UH_KEEP_SANDBOX=1, for UH_SANDBOX_KEEP_HOURS;',
    "then the sweep or uh gc removes it. An overlay sandbox's path is empty on the host: uh sandbox enter shows it.",
  ],
  examples: ['uh sandbox list', 'uh sandbox list --json'],
};

const ENTER: CommandSpec = {
  usage: 'uh sandbox enter <operation|name> [--state-dir dir] [-- command [args…]]',
  summary:
    "Run a command ($SHELL when none) in a kept sandbox, at its path, and exit with the command's code. What a " +
    "kept sandbox holds is the agent's (its scripts, its .git/config), so the command runs isolated as a check " +
    "does: under bubblewrap, the host read-only with its secrets and uh's dirs hidden, a private home and /tmp, " +
    "no network, and only the terminal's variables (PATH, HOME, TERM, LANG, USER, SHELL). A worktree sandbox is " +
    "its directory, writable; an overlay one is the mission's files under a scratch layer that goes when the " +
    'command ends, so nothing written there changes what the mission left.',
  options: { help: HELP, 'state-dir': { type: 'string' } },
  details: [
    'Several sandboxes of one operation (its attempts): the newest; name another with its sandbox name (uh sandbox list).',
    'An interactive shell runs in a session of its own (no job control; ^C ends it): the agent cannot type into your terminal.',
    "Exit: the command's; 2 no such kept sandbox; 3 no bubblewrap; 125 the overlay could not be mounted (the kernel's words above).",
  ],
  examples: [
    'uh sandbox enter op-123',
    'uh sandbox enter op-123 -- git diff --stat',
    'uh sandbox enter op-123 -- npm test',
  ],
};

export async function sandboxList(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(LIST, argv);
  if (values.help) return (void process.stdout.write(`${helpText(LIST)}\n`), EXIT.ok);
  if (positionals.length > 0) throw invalidInput(`unexpected argument ${positionals[0]}`, [], LIST.usage);
  const kept = keptSandboxes(config.core.cacheDir);
  if (values.json) writeJson({ sandboxes: kept });
  else if (kept.length === 0) process.stdout.write(`no kept sandboxes in ${config.core.cacheDir}\n`);
  else
    for (const s of kept)
      process.stdout.write(`${s.operation_id}  ${s.backend}  until ${s.keep_until}  ${s.name}\n  ${s.path}\n`);
  return EXIT.ok;
}

export async function sandboxEnter(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(ENTER, argv);
  if (values.help) return (void process.stdout.write(`${helpText(ENTER)}\n`), EXIT.ok);
  const [which, ...command] = positionals;
  if (which === undefined || which === '') throw invalidInput('<operation|name>: missing', [], ENTER.usage);
  const env = config.childEnv;
  return enterKept({
    cacheDir: config.core.cacheDir,
    stateDir: resolveStateDir(values['state-dir'] as string | undefined, config),
    which,
    argv: command.length > 0 ? command : [env.SHELL || '/bin/sh'],
    env,
    tmpfsBytes: config.core.isolationTmpfsBytes,
    readable: config.core.isolationReadable,
    ownSecrets: [
      config.receipts.keyFile,
      config.receipts.signingKeyFile,
      ...(config.queue.passwordFile ? [config.queue.passwordFile] : []),
      ...(config.core.secretsDir ? [config.core.secretsDir] : []),
    ],
  });
}
