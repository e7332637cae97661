/**
 * The git runner: `git` as a child with argv only, never a shell, in its own process group
 * (`spawnGroup`), so a timeout or the operation's abort signal ends git and whatever it started
 * (ssh, a remote helper). Every call is bounded: a default timeout per subcommand (long for
 * clone and fetch, short for plumbing), overridable per call. A non-zero exit, a timeout and an
 * abort are each a typed `GitError` naming the git command and the repository. Prompts are
 * disabled so a private URL fails fast. Every call is hardened (`shared/git-hardening.ts`):
 * no hooks, fsmonitor, replace objects, system or (except for network calls) global config.
 */
import { UhError } from '../../shared/errors.js';
import { spawnGroup, type SpawnGroup } from '../../shared/process/spawn-group.js';
import { GIT_HARDENING_ARGS, hardenedGitEnv } from '../../shared/git-hardening.js';

export interface GitCallOptions {
  /** Aborting ends the git process group; the call rejects with a `GitError` (`aborted`). */
  signal?: AbortSignal;
  /** Overrides the subcommand's default bound (`GIT_TIMEOUTS_MS`). */
  timeoutMs?: number;
}

export interface GitOptions extends GitCallOptions {
  cwd: string;
  env?: Record<string, string | undefined>;
  /** Allowed exit codes besides 0 (e.g. 1 for `diff --quiet`). */
  okCodes?: number[];
  /** Most stdout kept; past it the call fails (`output_too_large`). */
  maxBuffer?: number;
  /** What errors name as the repository; `cwd` when unset (a clone names its URL). */
  repository?: string;
  /** The process launcher (tests). */
  spawn?: SpawnGroup;
  /** A clone or fetch: keeps the user's global config (credential helpers); see `shared/git-hardening.ts`. */
  network?: boolean;
  /** `--git-dir` / `--work-tree` (a sandbox's private git dir over its worktree). */
  gitDir?: string;
  workTree?: string;
  /** Written to git's stdin (then closed), e.g. a `--pathspec-from-file=-` list; unset: no stdin. */
  input?: string;
  /**
   * A stderr line starting with this fails the call (`exit`, the line in the message), whatever
   * git's exit code: for a command that skips an input with a warning and goes on.
   */
  stderrFails?: string;
}

const MINUTE = 60_000;
/** Default bound per subcommand: network calls may move a large repository; plumbing is quick. */
export const GIT_TIMEOUTS_MS: Readonly<Record<string, number>> = {
  clone: 30 * MINUTE,
  fetch: 30 * MINUTE,
  worktree: 10 * MINUTE, // add and remove touch every file of the tree
  reset: 10 * MINUTE, // the checkout of a sandbox
  add: 10 * MINUTE, // hashes every changed file for the diff
  'update-index': 10 * MINUTE, // the same, for the diff's staging
  diff: 10 * MINUTE,
  'rev-parse': 30_000,
  config: 30_000,
};
const DEFAULT_TIMEOUT_MS = 5 * MINUTE;
const STDERR_TAIL_BYTES = 16 * 1024;

export type GitFailure = 'exit' | 'timeout' | 'aborted' | 'output_too_large' | 'spawn';

/** A git call that failed, timed out or was aborted; `command` and `repository` say which. */
export class GitError extends UhError {
  override readonly name = 'GitError';
  constructor(
    readonly failure: GitFailure,
    readonly command: string,
    readonly repository: string,
    message: string,
    hint: string,
  ) {
    super('sandbox', message, { hint });
  }
}

/**
 * The environment of every git call: the process's own minus every redirecting `GIT_*`
 * variable, hardened (`shared/git-hardening.ts`), then `extra`. The only env read here.
 */
export function gitEnv(extra: Record<string, string | undefined> = {}, network = false): NodeJS.ProcessEnv {
  // env passthrough: git (a child) inherits uh's environment (PATH, HOME, credentials helpers).
  return { ...hardenedGitEnv(process.env, { network }), GIT_ASKPASS: 'echo', ...extra } as NodeJS.ProcessEnv;
}

/** The argv of a hardened git call. */
export function gitArgv(args: readonly string[]): string[] {
  return ['git', ...GIT_HARDENING_ARGS, ...args];
}

/** Credentials in a URL (`https://user:token@host`) never reach a message. */
function withoutCredentials(text: string): string {
  return text.replace(/(\w+:\/\/)[^/@\s]+@/g, '$1***@');
}

export async function git(args: readonly string[], options: GitOptions): Promise<{ stdout: string; code: number }> {
  const subcommand = args[0] ?? '';
  const timeoutMs = options.timeoutMs ?? GIT_TIMEOUTS_MS[subcommand] ?? DEFAULT_TIMEOUT_MS;
  const maxBuffer = options.maxBuffer ?? 64 * 1024 * 1024;
  const out: Buffer[] = [];
  let outBytes = 0;
  let errTail = '';
  const child = (options.spawn ?? spawnGroup)({
    argv: gitArgv([
      ...(options.gitDir ? [`--git-dir=${options.gitDir}`] : []),
      ...(options.workTree ? [`--work-tree=${options.workTree}`] : []),
      ...args,
    ]),
    cwd: options.cwd,
    env: gitEnv(options.env, options.network),
    stdin: options.input === undefined ? 'ignore' : { text: options.input },
    stdout: 'pipe',
    stderr: 'pipe',
    timeoutMs,
    killGraceMs: 2000,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  child.stdout?.on('data', (chunk: Buffer) => {
    outBytes += chunk.length;
    if (outBytes > maxBuffer) child.terminate();
    else out.push(chunk);
  });
  const refusal = stderrWatch(options.stderrFails);
  child.stderr?.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    refusal.feed(text);
    errTail = (errTail + text).slice(-STDERR_TAIL_BYTES);
  });
  const result = await child.result;
  const code = result.exitCode ?? -1;
  const failure: GitFailure | null = result.spawnError
    ? 'spawn'
    : result.aborted
      ? 'aborted'
      : result.timedOut
        ? 'timeout'
        : outBytes > maxBuffer
          ? 'output_too_large'
          : refusal.line() === null && (code === 0 || options.okCodes?.includes(code))
            ? null
            : 'exit';
  if (failure === null) return { stdout: Buffer.concat(out).toString('utf8'), code };
  const stderr = refusal.line() ?? (result.spawnError?.message ?? errTail).trim().split('\n').slice(-3).join(' ');
  throw gitError(failure, subcommand, options.repository ?? options.cwd, { timeoutMs, stderr });
}

/** The first stderr line that starts with `prefix` (none without one), however long stderr gets. */
function stderrWatch(prefix: string | undefined): { feed: (text: string) => void; line: () => string | null } {
  let carry = '';
  let hit: string | null = null;
  const scan = (line: string) => {
    if (hit === null && prefix !== undefined && line.startsWith(prefix)) hit = line.slice(0, 1024);
  };
  return {
    feed: (text) => {
      if (prefix === undefined || hit !== null) return;
      const lines = (carry + text).split('\n');
      carry = (lines.pop() ?? '').slice(0, 4096);
      lines.forEach(scan);
    },
    line: () => (scan(carry), hit),
  };
}

function gitError(
  failure: GitFailure,
  command: string,
  repository: string,
  facts: { timeoutMs: number; stderr: string },
): GitError {
  const where = withoutCredentials(repository);
  const said = withoutCredentials(facts.stderr);
  const [message, hint] = {
    exit: [
      `git ${command} failed in ${where}: ${said}`,
      'check the repository url and ref; run the same git command by hand to see more',
    ],
    timeout: [
      `git ${command} timed out after ${Math.round(facts.timeoutMs / 1000)} s in ${where}`,
      'the remote did not answer in time: check the network and the URL, then run again',
    ],
    aborted: [
      `git ${command} was aborted in ${where} (the operation was cancelled)`,
      'nothing to do: the cancel stopped git',
    ],
    output_too_large: [
      `git ${command} printed more output than allowed in ${where}`,
      'this is a bug; please report it',
    ],
    spawn: [`git ${command} could not start in ${where}: ${said}`, 'is git on PATH, and does the directory exist?'],
  }[failure] as [string, string];
  return new GitError(failure, command, where, message, hint);
}
