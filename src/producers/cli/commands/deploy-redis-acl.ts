/**
 * `uh deploy redis-acl --passwords <dir> [--prefix p] [--generate]`: print the Redis ACL file of a
 * fleet (one user per role, src/shared/queue/redis-acl.ts), with each role's password read from
 * `<dir>/<role>` (the same files the roles mount as UH_REDIS_PASSWORD_FILE).
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { UhConfig } from '../../../shared/config.js';
import { EXIT } from '../../../shared/contracts/status.js';
import { makeDir } from '../../../shared/fs/make-dir.js';
import { invalidInput } from '../../../shared/errors.js';
import {
  REDIS_ROLES,
  REDIS_ROLE_DOES,
  redisAclFile,
  redisUserName,
  type RedisRole,
} from '../../../shared/queue/redis-acl.js';
import { helpText, parseCommand, type CommandSpec } from '../cli-kit.js';

const ACL: CommandSpec = {
  usage: 'uh deploy redis-acl --passwords <dir> [--prefix p] [--generate] [--out file]',
  summary:
    'Print the Redis ACL file (redis-server --aclfile) of a fleet: the default user off, one user <prefix>-<role> ' +
    'per role (producer, worker, results, api) limited to the keys and channels {<prefix>}:* and to the commands ' +
    'of its role; each password from <dir>/<role>, stored as its SHA-256. --generate first writes a random password ' +
    'into every missing <dir>/<role> (0600). Each role then connects as REDIS_URL=redis://<prefix>-<role>@host:6379 ' +
    'with UH_REDIS_PASSWORD_FILE=<its password file>.',
  options: {
    help: { type: 'boolean', short: 'h', default: false },
    passwords: { type: 'string' },
    prefix: { type: 'string' },
    generate: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
  details: [
    ...REDIS_ROLES.map((r) => `${r.padEnd(9)} ${REDIS_ROLE_DOES[r]}`),
    '--prefix defaults to $UH_REDIS_PREFIX (uh). docs/deploy.md, "Redis ACL users".',
  ],
  examples: [
    'uh deploy redis-acl --passwords ./redis-secrets --generate --out ./redis-secrets/users.acl',
    'uh deploy redis-acl --passwords /run/secrets/uh-redis --prefix team-a',
  ],
};

function readPasswords(dir: string, generate: boolean): Record<RedisRole, string> {
  if (generate) makeDir(dir, 0o700);
  const out = {} as Record<RedisRole, string>;
  for (const role of REDIS_ROLES) {
    const file = join(dir, role);
    if (!existsSync(file)) {
      if (!generate) throw invalidInput(`no password file ${file}`, [], 'write one per role, or pass --generate');
      writeFileSync(file, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
      chmodSync(file, 0o600);
    }
    const password = (readFileSync(file, 'utf8').split(/\r?\n/)[0] ?? '').trim();
    if (password.length < 16) throw invalidInput(`${file}: a password of at least 16 characters`, [], 'or --generate');
    out[role] = password;
  }
  return out;
}

export async function deployRedisAcl(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(ACL, argv);
  if (values.help) return (void process.stdout.write(`${helpText(ACL)}\n`), EXIT.ok);
  if (positionals.length > 0) throw invalidInput(`unexpected argument ${positionals[0]}`, [], ACL.usage);
  const dir = values.passwords as string | undefined;
  if (!dir) throw invalidInput('uh deploy redis-acl needs --passwords <dir>', [], ACL.usage);
  const prefix = (values.prefix as string | undefined) ?? config.queue.prefix;
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(prefix))
    throw invalidInput(`--prefix: "${prefix}" must be letters, digits, . _ - only`, [], ACL.usage);
  const file = redisAclFile(prefix, readPasswords(dir, Boolean(values.generate)));
  const out = values.out as string | undefined;
  if (!out) return (void process.stdout.write(file), EXIT.ok);
  writeFileSync(out, file, { mode: 0o644 }); // hashes of 256-bit random passwords only: redis-server must read it
  const users = REDIS_ROLES.map((r) => redisUserName(prefix, r)).join(', ');
  process.stderr.write(`wrote ${out}: users ${users} (keys {${prefix}}:*)\n`);
  return EXIT.ok;
}
