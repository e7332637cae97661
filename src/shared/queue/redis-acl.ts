/**
 * Redis ACL users per fleet role (docs/deploy.md, "Redis ACL"): the one source of the ACL file the
 * deploy files start Redis with (`uh deploy redis-acl`) and of test/security/redis-acl.test.ts.
 *
 * Every role's user is `<prefix>-<role>`, on, with one password (stored as its SHA-256, never in
 * clear), and reaches only the fleet's keys `{<prefix>}:*` (uh's own and BullMQ's `{<prefix>}:bull:*`,
 * topology.ts) and pub/sub channels `{<prefix>}:*` (the cancel channel). The anonymous `default`
 * user is off. What every role is denied:
 *   - `@dangerous` and `@admin`: FLUSHALL, FLUSHDB, KEYS, CONFIG, DEBUG, MONITOR (every command of
 *     every client), SHUTDOWN, ACL SETUSER/LOG, CLIENT LIST/KILL, MIGRATE, RESTORE, SORT, REPLICAOF…
 *     except INFO, which BullMQ reads at connect (version, maxmemory-policy).
 *   Allowed beyond the categories: TIME (in none of them), the server clock the settle script
 *   stamps the settled index with (event retention).
 *   - FUNCTION, FCALL: a loaded function would outlive the caller; SCRIPT FLUSH/KILL: others' scripts.
 *   - SELECT, MOVE, SWAPDB: a fleet lives in database 0.
 *   - RANDOMKEY, KEYS, PUBSUB: key patterns do not filter their answers, so they would name other
 *     fleets' keys and channels. SCAN stays (live workers are found by SCAN MATCH `{<prefix>}:worker:*`,
 *     runtime queues by `{<prefix>}:bull:runtime.*`): Redis does not filter its answer either, so a
 *     role can learn the NAMES of other fleets' keys (operation ids), never their values.
 * And per role, the commands of jobs that are not its own:
 *   - only the results worker consumes the completion outbox (XREADGROUP, XACK, XAUTOCLAIM, XCLAIM,
 *     XGROUP: the consumer group `results`);
 *   - producers and the API delete nothing (DEL, UNLINK outside Lua scripts are the workers' GC).
 *   - the fleet's published adapter manifests (`{<prefix>}/adapters*`, adapter-store.ts: outside
 *     `{<prefix>}:*` on purpose) are written by the producer and API roles (`uh adapter publish`)
 *     and only read (`%R~`) by the workers: a worker host cannot change what the others run.
 * Lua scripts run as the caller: every command inside one is checked against the same rules and
 * key patterns, so a script cannot reach another fleet either.
 */
import { createHash } from 'node:crypto';
import { adapterKeys } from './adapter-store.js';
import { taggedPrefix } from './topology.js';

export const REDIS_ROLES = ['producer', 'worker', 'results', 'api'] as const;
export type RedisRole = (typeof REDIS_ROLES)[number];

export const REDIS_ROLE_DOES: Record<RedisRole, string> = {
  producer: 'uh mission submit|status|watch|collect|cancel|list, uh batch submit (CI, laptops)',
  worker: 'uh worker start --runtime …: claims, runs and settles missions, heartbeats, GC',
  results: 'uh worker start --results: the outbox consumer (webhook, batch settlement, promotion)',
  api: 'uh api start: submit, read, cancel, promote, /v1/workers, /metrics, bull-board',
};

/** Commands no role runs (after `-@dangerous -@admin`). */
const DENIED_TO_ALL = [
  '-function',
  '-fcall',
  '-fcall_ro',
  '-script|flush',
  '-script|kill',
  '-select',
  '-move',
  '-swapdb',
  '-randomkey',
  '-pubsub',
];
const OUTBOX_CONSUMER = ['xreadgroup', 'xack', 'xautoclaim', 'xclaim', 'xgroup'];
const DELETE = ['del', 'unlink'];

/** Per role: commands denied on top of DENIED_TO_ALL. */
const ROLE_DENIES: Record<RedisRole, string[]> = {
  producer: [...OUTBOX_CONSUMER, ...DELETE],
  worker: OUTBOX_CONSUMER,
  results: [],
  api: [...OUTBOX_CONSUMER, ...DELETE],
};

/** Who may publish adapter manifests (write `{<prefix>}/adapters*`); the other roles read them only. */
const PUBLISHERS: ReadonlySet<RedisRole> = new Set(['producer', 'api']);

/** A fleet prefix usable as a literal ACL glob (no `*?[]\\`): the UH_REDIS_PREFIX alphabet. */
const PREFIX = /^[A-Za-z0-9._-]{1,64}$/;

export function redisUserName(prefix: string, role: RedisRole): string {
  return `${prefix}-${role}`;
}

/** The ACL rules of one role (everything after `user <name>` except the password). */
export function redisRoleRules(prefix: string, role: RedisRole): string[] {
  if (!PREFIX.test(prefix)) throw new Error(`redis ACL: prefix "${prefix}" must match ${PREFIX.source}`);
  const tag = taggedPrefix(prefix);
  return [
    'on',
    'resetkeys',
    `~${tag}:*`,
    `${PUBLISHERS.has(role) ? '' : '%R'}~${adapterKeys(prefix).pattern}`,
    'resetchannels',
    `&${tag}:*`,
    '-@all',
    '+@connection',
    '+@read',
    '+@write',
    '+@scripting',
    '+@transaction',
    '+@blocking',
    '+@pubsub',
    '-@dangerous',
    '-@admin',
    '+info',
    '+time',
    ...DENIED_TO_ALL,
    ...ROLE_DENIES[role].map((c) => `-${c}`),
  ];
}

/** The ACL file: `default` off, then one line per role with its password's SHA-256. */
export function redisAclFile(prefix: string, passwords: Record<RedisRole, string>): string {
  // An ACL file has no comments: every line is a user.
  const lines = ['user default off resetkeys resetchannels -@all'];
  for (const role of REDIS_ROLES) {
    const hash = createHash('sha256').update(passwords[role]).digest('hex');
    lines.push(`user ${redisUserName(prefix, role)} ${redisRoleRules(prefix, role).join(' ')} #${hash}`);
  }
  return `${lines.join('\n')}\n`;
}
