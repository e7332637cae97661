/**
 * `uh mission promote <operation_id>`: make a verified operation's captured diff a commit on a
 * new branch (default `uh/<operation_id>`) without touching the user's checkout, optionally
 * push it, and record `uh.promotion.v0`. Local state dir, or Redis in queue mode.
 */
import { existsSync } from 'node:fs';
import type { UhConfig } from '../../../shared/config.js';
import type { PromotionRecord } from '../../../shared/contracts/promotion.js';
import { EXIT } from '../../../shared/contracts/status.js';
import { invalidInput } from '../../../shared/errors.js';
import { promotionIdentity } from '../../../promotion/promotion-identity.js';
import { operationDir } from '../../../operation/operation-files.js';
import {
  COMMON_OPTIONS,
  helpText,
  parseCommand,
  queueRedisUrl,
  resolveStateDir,
  writeJson,
  type CommandSpec,
} from '../cli-kit.js';

export const MISSION_PROMOTE: CommandSpec = {
  usage:
    'uh mission promote <operation_id> [--branch name] [--push [remote]] [--allow-unverified] [--author "Name <email>"] [--committer "Name <email>"] [--json] [--state-dir dir] [--redis url]',
  summary:
    "Make a verified operation's captured diff a commit (parent: its base commit) on a new branch, default uh/<operation_id>, in the user's repository (a remote repository: in its mirror, then pushed). HEAD, index, working tree and stash are never touched.",
  options: {
    ...COMMON_OPTIONS,
    branch: { type: 'string' },
    push: { type: 'boolean', default: false },
    remote: { type: 'string' },
    'allow-unverified': { type: 'boolean', default: false },
    author: { type: 'string' },
    committer: { type: 'string' },
    redis: { type: 'string' },
  },
  details: [
    'Only verified operations promote; unverified ones with --allow-unverified; scope violations, failures, cancelled and unknown never (exit 2).',
    'Promoting again returns the same branch and commit; another branch for a promoted operation is a conflict (exit 2).',
    "--push [remote] pushes <commit>:refs/heads/<branch> (remote default origin) with this process's git credentials; a rejected push exits 3 with the remote's reason.",
    'Author and committer: --author/--committer, else $UH_PROMOTION_AUTHOR/$UH_PROMOTION_COMMITTER, else "Ultimate Harness <uh@localhost>".',
    'The record (uh.promotion.v0) is written to promotion.json beside the receipt, and to Redis in queue mode. See docs/promotion.md.',
  ],
  examples: [
    'uh mission promote hello-001',
    'uh mission promote hello-001 --branch feature/hello --push origin --json',
    'uh mission promote ci-42 --redis redis://queue:6379 --push',
  ],
};

/** `--push <remote>` (when an operation id is still left) and `--push=<remote>` become `--push --remote <remote>`. */
export function normalizePushArg(argv: string[]): string[] {
  const out: string[] = [];
  const positional = (t: string | undefined) => t !== undefined && !t.startsWith('-');
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i] as string;
    if (token.startsWith('--push=')) {
      out.push('--push', '--remote', token.slice('--push='.length));
    } else if (
      token === '--push' &&
      positional(argv[i + 1]) &&
      (out.some(positional) || argv.slice(i + 2).some(positional))
    ) {
      out.push('--push', '--remote', argv[i + 1] as string);
      i += 1;
    } else out.push(token);
  }
  return out;
}

function useRedis(values: Record<string, unknown>, stateDir: string, id: string, config: UhConfig): boolean {
  if (values.redis) return true;
  if (existsSync(operationDir(stateDir, id))) return false;
  return Boolean(config.queue.redisUrl);
}

function printRecord(record: PromotionRecord, created: boolean): void {
  const lines = [
    `${created ? 'promoted' : 'already promoted'} ${record.operation_id} → branch ${record.branch} (commit ${record.commit})`,
  ];
  lines.push(
    `  repository: ${record.repository.url} (${record.repository.kind})${record.tree_verified ? ', tree checked against the receipt' : ''}`,
  );
  if (record.pushed) lines.push(`  pushed: ${record.pushed.remote} ${record.pushed.ref}`);
  if (record.mergeable) {
    const m = record.mergeable;
    lines.push(
      `  merges cleanly into ${m.into} (${m.head.slice(0, 12)}): ${m.clean ? 'yes' : `no, conflicts in ${m.conflicts.join(', ')}`}`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

export async function missionPromote(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(MISSION_PROMOTE, normalizePushArg(argv));
  if (values.help) return (void process.stdout.write(`${helpText(MISSION_PROMOTE)}\n`), EXIT.ok);
  if (positionals.length !== 1)
    throw invalidInput('uh mission promote needs one operation_id', [], MISSION_PROMOTE.usage);
  if (values.remote !== undefined && !values.push)
    throw invalidInput('--remote: only with --push', [], MISSION_PROMOTE.usage);
  const id = positionals[0] as string;
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  const options = {
    operationId: id,
    branch: values.branch as string | undefined,
    push: values.push ? { remote: values.remote as string | undefined } : null,
    allowUnverified: Boolean(values['allow-unverified']),
    identity: promotionIdentity(
      { author: values.author as string | undefined, committer: values.committer as string | undefined },
      config.childEnv,
    ),
    via: 'cli' as const,
    cacheDir: config.core.cacheDir,
    receiptKey: config.receipts,
  };
  const { promoteFromStateDir, promoteFromStore } = await import('../../../workers/promotion/promote-from.js');
  let result;
  if (useRedis(values, stateDir, id, config)) {
    const { QueueClient } = await import('../../queue/queue-client.js');
    const client = await QueueClient.open(config.queue, queueRedisUrl(config, values.redis as string | undefined));
    try {
      result = await promoteFromStore(client.store, options);
    } finally {
      await client.close();
    }
  } else result = await promoteFromStateDir(stateDir, options);
  if (values.json) writeJson({ ...result.record, created: result.created });
  else printRecord(result.record, result.created);
  return EXIT.ok;
}
