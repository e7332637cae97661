import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { UhConfig } from '../../../shared/config.js';
import { EXIT } from '../../../shared/contracts/status.js';
import { invalidInput } from '../../../shared/errors.js';
import { COMMON_OPTIONS, helpText, parseCommand, writeJson, type CliSelf, type CommandSpec } from '../cli-kit.js';
import { onInterrupt } from '../interrupts.js';
import { askResident, residentDir, residentStatus } from '../resident/ask.js';
import type { ResidentStatus } from '../resident/server.js';

const { help: HELP, json: JSON_FLAG } = COMMON_OPTIONS;

const START: CommandSpec = {
  usage: 'uh daemon start [--idle-minutes n]',
  summary:
    "Keep uh loaded in this process, in the foreground, and serve the `uh mission run` commands of this user and cache dir: each one hands its run over and skips uh's start-up (~40 ms of a ~130 ms run here). A run is served only when serving it is the same as running it: the same build of uh, the same node and the same environment (compared, never written anywhere); any other run, and a second run while one is served, runs in its own process as before. The run is the same in every way: its sandbox, isolation, records and receipt; its output, exit code and Ctrl-C are the client's.",
  options: { 'idle-minutes': { type: 'string' }, help: HELP },
  details: [
    'The socket is <cache dir>/daemon/uh.sock, in a directory only this user can enter; a sandbox never sees it.',
    'Stops on Ctrl-C or SIGTERM (a run being served is cancelled, as its own Ctrl-C would), on uh daemon stop',
    '(a run being served finishes first), or after --idle-minutes (default 60) with nothing served.',
    'UH_RESIDENT=off makes uh mission run never hand over. docs/resident.md says more.',
  ],
  examples: ['uh daemon start &', 'uh daemon start --idle-minutes 10'],
};

const STATUS: CommandSpec = {
  usage: 'uh daemon status [--json]',
  summary:
    'Whether a resident uh serves this cache dir: its pid, what it served and refused, the last refusal. Exit 0 yes, 1 no.',
  options: { json: JSON_FLAG, help: HELP },
  examples: ['uh daemon status', 'uh daemon status --json'],
};

const STOP: CommandSpec = {
  usage: 'uh daemon stop',
  summary:
    'Stop the resident uh of this cache dir, after the run it serves (if any) has finished. Exit 0 stopped, 1 none was serving.',
  options: { help: HELP },
  examples: ['uh daemon stop'],
};

/** The digest of the bundle this module runs in (bin/run-bundle.js reads it the same way); null outside it. */
function buildDigest(): string | null {
  try {
    return readFileSync(`${fileURLToPath(import.meta.url)}.sha256`, 'utf8')
      .trim()
      .slice(0, 32);
  } catch {
    return null;
  }
}

function idleMinutes(raw: string | undefined): number {
  if (raw === undefined) return 60;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0 || n > 7 * 24 * 60)
    throw invalidInput(
      `--idle-minutes: "${raw}" is not a number of minutes`,
      [],
      'e.g. --idle-minutes 30 (at most a week)',
    );
  return n;
}

export async function daemonStart(argv: string[], config: UhConfig, cli: CliSelf): Promise<number> {
  const { values } = parseCommand(START, argv);
  if (values.help) {
    process.stdout.write(`${helpText(START)}\n`);
    return EXIT.ok;
  }
  const idleMs = idleMinutes(values['idle-minutes'] as string | undefined) * 60_000;
  const { startResident } = await import('../resident/server.js');
  const stderr = process.stderr.write.bind(process.stderr);
  const log = (line: string) => void stderr(`${line}\n`);
  const resident = await startResident({
    dir: residentDir(config.core.cacheDir),
    build: buildDigest(),
    env: config.childEnv,
    idleMs,
    run: (command) => cli.run(command),
    log,
  });
  log(`uh daemon: serving uh mission run at ${resident.socket} (pid ${process.pid}); Ctrl-C stops it`);
  const stopListening = onInterrupt((signal) => void resident.stop(signal));
  await resident.stopped;
  stopListening();
  const { served, refused } = resident.status();
  log(`uh daemon: stopped; served ${served} run(s), refused ${refused}`);
  return EXIT.ok;
}

export async function daemonStatus(argv: string[], config: UhConfig): Promise<number> {
  const { values } = parseCommand(STATUS, argv);
  if (values.help) {
    process.stdout.write(`${helpText(STATUS)}\n`);
    return EXIT.ok;
  }
  const status = await residentStatus(config.core.cacheDir);
  if (values.json) writeJson(status ? { running: true, ...status } : { running: false });
  else if (!status) process.stdout.write(`no resident uh serves ${config.core.cacheDir} (uh daemon start)\n`);
  else process.stdout.write(statusLines(status));
  return status ? EXIT.ok : EXIT.failed;
}

function statusLines(s: ResidentStatus): string {
  return [
    `resident uh: pid ${s.pid}, since ${s.started_at}, at ${s.socket}`,
    `  served ${s.served}, refused ${s.refused}${s.serving ? `; serving: uh ${s.serving.join(' ')}` : ''}`,
    ...(s.last_run_ms === null ? [] : [`  the last run took ${s.last_run_ms} ms in it`]),
    `  memory: ${(s.rss_bytes / 1e6).toFixed(0)} MB resident, ${(s.heap_used_bytes / 1e6).toFixed(0)} MB of heap in use`,
    ...(s.last_refusal ? [`  last refused: ${s.last_refusal}`] : []),
    `  stops when idle at ${s.idle_exit_at}`,
    '',
  ].join('\n');
}

export async function daemonStop(argv: string[], config: UhConfig): Promise<number> {
  const { values } = parseCommand(STOP, argv);
  if (values.help) {
    process.stdout.write(`${helpText(STOP)}\n`);
    return EXIT.ok;
  }
  const answers = await askResident(config.core.cacheDir, 'stop');
  const stopping = answers?.find((a) => a.kind === 'stopping');
  process.stdout.write(
    stopping ? `stopped the resident uh (pid ${stopping.pid})\n` : `no resident uh serves ${config.core.cacheDir}\n`,
  );
  return stopping ? EXIT.ok : EXIT.failed;
}
