/**
 * Who may call the API: tokens with scopes and a tenant (docs/security.md, "Teams").
 *
 * The tokens file (`UH_API_TOKENS_FILE`, YAML or JSON) holds only SHA-256 hashes, never a token:
 *
 *   tokens:
 *     - id: ci-team-a            # named in the access log (never the token)
 *       tenant: team-a           # the operations this token submits and sees
 *       scopes: [read, submit]   # read · submit · cancel · promote · admin
 *       sha256: 9f86d0…          # printf %s "$TOKEN" | sha256sum
 *
 * `admin` holds every scope and sees every tenant's operations (metrics, bull-board, recover).
 * The single `UH_API_TOKEN` (or the `--insecure-loopback` token) stays an admin token.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { invalidInput } from '../../shared/errors.js';

export const SCOPES = ['read', 'submit', 'cancel', 'promote', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

/** A tenant label: what an operation record carries and a quota is keyed by. */
export const TENANT_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const TenantSchema = z.string().regex(TENANT_PATTERN, 'a tenant: letters, digits, . _ - (at most 64)');

export interface TokenEntry {
  /** Named in the access log and the dashboard session; never secret. */
  id: string;
  tenant: string;
  scopes: ReadonlySet<Scope>;
  /** SHA-256 of the token, raw bytes. */
  sha256: Buffer;
}

const EntrySchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'letters, digits, . _ - (at most 64)'),
  tenant: TenantSchema,
  scopes: z.array(z.enum(SCOPES)).min(1),
  sha256: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'the SHA-256 of the token as 64 hex digits (printf %s "$TOKEN" | sha256sum)'),
});
const FileSchema = z.strictObject({ tokens: z.array(z.unknown()).min(1) });

export const sha256 = (s: string): Buffer => createHash('sha256').update(s).digest();

/** An admin entry for a token given in clear (UH_API_TOKEN, the loopback token). */
export function adminEntry(id: string, token: string, tenant: string): TokenEntry {
  return { id, tenant, scopes: new Set(SCOPES), sha256: sha256(token) };
}

function entryOf(raw: unknown, i: number, file: string): TokenEntry {
  const parsed = EntrySchema.safeParse(raw);
  const id = (raw as { id?: unknown } | null)?.id;
  const name = `tokens[${i}]${typeof id === 'string' ? ` (id "${id.slice(0, 64)}")` : ''}`;
  if (!parsed.success) {
    throw invalidInput(
      `UH_API_TOKENS_FILE: ${file}: ${name} is invalid`,
      parsed.error.issues.map((issue) => `${name}.${issue.path.join('.') || '(entry)'}: ${issue.message}`),
      'each entry: {id, tenant, scopes: [read|submit|cancel|promote|admin], sha256}',
    );
  }
  const e = parsed.data;
  return { id: e.id, tenant: e.tenant, scopes: new Set(e.scopes), sha256: Buffer.from(e.sha256, 'hex') };
}

/** Parse the tokens file at start-up; every error names the file and the bad entry (exit 2). */
export function readTokensFile(file: string): TokenEntry[] {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, 'utf8'), { maxAliasCount: 10 });
  } catch (error) {
    throw invalidInput(
      `UH_API_TOKENS_FILE: cannot read ${file}: ${(error as Error).message}`,
      [],
      'a YAML or JSON file',
    );
  }
  const top = FileSchema.safeParse(doc);
  if (!top.success)
    throw invalidInput(`UH_API_TOKENS_FILE: ${file}: expected {tokens: [entries…]}`, [], 'see docs/security.md#teams');
  const entries = top.data.tokens.map((raw, i) => entryOf(raw, i, file));
  const seen = new Map<string, number>();
  entries.forEach((e, i) => {
    const key = e.sha256.toString('hex');
    for (const [what, k] of [
      ['id', `id:${e.id}`],
      ['sha256', `sha:${key}`],
    ] as const) {
      const first = seen.get(k);
      if (first !== undefined)
        throw invalidInput(
          `UH_API_TOKENS_FILE: ${file}: tokens[${i}] (id "${e.id}") repeats the ${what} of tokens[${first}]`,
        );
      seen.set(k, i);
    }
  });
  return entries;
}

/** The entry whose hash is the given token's; every entry compared in constant time. */
export function tokenEntry(entries: readonly TokenEntry[], given: string): TokenEntry | null {
  const hash = sha256(given);
  let found: TokenEntry | null = null;
  for (const e of entries) if (timingSafeEqual(hash, e.sha256) && found === null) found = e;
  return found;
}

export function hasScope(entry: TokenEntry, scope: Scope): boolean {
  return entry.scopes.has('admin') || entry.scopes.has(scope);
}

/** Admin sees every tenant; anyone else only its own. */
export function seesTenant(entry: TokenEntry, tenant: string): boolean {
  return entry.scopes.has('admin') || entry.tenant === tenant;
}
