import type { UhConfig } from '../../../shared/config.js';
import { EXIT } from '../../../shared/contracts/status.js';
import { invalidInput } from '../../../shared/errors.js';
import { readRecord } from '../../../operation/operation-files.js';
import {
  COMMON_OPTIONS,
  helpText,
  parseCommand,
  queueRedisUrl,
  resolveStateDir,
  writeJson,
  type CommandSpec,
} from '../cli-kit.js';

export const GC: CommandSpec = {
  usage: 'uh gc [--dry-run] [--json] [--redis url] [--state-dir dir]',
  summary:
    "Apply the cache's retention policy now (as every worker does at start and every $UH_GC_INTERVAL_MS) and list what it freed, with sizes. --dry-run lists without deleting.",
  options: { ...COMMON_OPTIONS, 'dry-run': { type: 'boolean', default: false }, redis: { type: 'string' } },
  details: [
    'Policy (docs/deploy.md, "Disk"): sandboxes past keep_until ($UH_SANDBOX_KEEP_HOURS); active sandboxes of settled operations;',
    'mirrors unused for $UH_MIRROR_IDLE_DAYS; the cap $UH_CACHE_CAP_BYTES (oldest kept sandboxes, then idle mirrors);',
    'settled operation dirs older than $UH_OPERATION_RETENTION_DAYS. Never a running or unknown operation.',
    "Then uh's phase cgroups whose owning process is gone (a crashed worker's) are emptied and removed.",
    'Operation states come from Redis with --redis or $REDIS_URL (a worker host), else from the local state dir.',
  ],
  examples: ['uh gc --dry-run', 'uh gc --json'],
};

export async function gc(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(GC, argv);
  if (values.help) return (void process.stdout.write(`${helpText(GC)}\n`), EXIT.ok);
  if (positionals.length > 0)
    throw invalidInput(`uh gc takes no arguments (got ${positionals.join(' ')})`, [], GC.usage);
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  const { planGc, applyGc } = await import('../../../workers/sandbox/gc.js');
  const useRedis = typeof values.redis === 'string' || config.queue.redisUrl !== null;
  const client = useRedis
    ? await (
        await import('../../queue/queue-client.js')
      ).QueueClient.open(config.queue, queueRedisUrl(config, values.redis))
    : null;
  try {
    const operationState = async (id: string) =>
      client ? ((await client.store.get(id))?.state ?? null) : (readRecord(stateDir, id)?.state ?? null);
    const now = new Date();
    const policy = {
      now,
      mirrorIdleDays: config.gc.mirrorIdleDays,
      operationRetentionDays: config.gc.operationRetentionDays,
      cacheCapBytes: config.gc.cacheCapBytes,
    };
    const plan = await planGc(config.core.cacheDir, stateDir, policy, { operationState });
    const dryRun = values['dry-run'] === true;
    const done = dryRun
      ? { removed: plan, orphans: [] as string[], cgroups: [] as string[] }
      : await applyGc(config.core.cacheDir, plan, now);
    const bytes = done.removed.reduce((n, i) => n + i.bytes, 0);
    const items = done.removed.map(({ record: _record, ...i }) => i);
    if (values.json)
      writeJson({
        dry_run: dryRun,
        cache_dir: config.core.cacheDir,
        bytes,
        items,
        orphans: done.orphans,
        cgroups: done.cgroups,
      });
    else {
      for (const i of items)
        process.stdout.write(
          `${dryRun ? 'would free' : 'freed'} ${String(i.bytes).padStart(12)} B  ${i.kind.padEnd(16)} ${i.path}\n`,
        );
      for (const o of done.orphans) process.stdout.write(`freed orphan worktree ${o}\n`);
      for (const c of done.cgroups) process.stdout.write(`removed stale cgroup ${c}\n`);
      process.stdout.write(
        `${dryRun ? 'would free' : 'freed'} ${bytes} bytes in ${items.length} item(s) under ${config.core.cacheDir}\n`,
      );
    }
    return EXIT.ok;
  } finally {
    await client?.close();
  }
}
