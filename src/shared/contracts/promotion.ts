/**
 * `uh.promotion.v0`: the record of one promotion (an operation's captured diff made a commit on
 * a branch), written beside the receipt as `promotion.json` and, in queue mode, in Redis. Also
 * the mission's `promotion` setting and the branch-name rules both sides check.
 */
import { z } from 'zod';

/** Placeholders a branch pattern may use; each is an id (`[A-Za-z0-9._-]`), so the result stays a valid name. */
export const BRANCH_PLACEHOLDERS = ['operation_id', 'mission_id', 'runtime'] as const;

/** git's ref-name rules (git-check-ref-format) for a branch name, without calling git. */
export function branchNameProblem(name: string): string | null {
  if (name.length === 0) return 'must not be empty';
  if (name.length > 200) return 'must be at most 200 characters';
  if (name.startsWith('-')) return 'must not start with "-"';
  // eslint-disable-next-line no-control-regex -- git refuses control characters in ref names
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(name))
    return 'must not contain spaces, control characters or any of ~ ^ : ? * [ \\';
  if (name.includes('..') || name.includes('@{') || name === '@') return 'must not contain ".." or "@{"';
  if (name.startsWith('/') || name.endsWith('/') || name.includes('//'))
    return 'must not start or end with "/" or contain "//"';
  if (name.endsWith('.')) return 'must not end with "."';
  if (name.split('/').some((part) => part.startsWith('.') || part.endsWith('.lock')))
    return 'no component may start with "." or end with ".lock"';
  return null;
}

/** A branch name or pattern (`uh/{operation_id}`): valid once its placeholders are filled. */
export const BranchPatternSchema = z.string().superRefine((pattern, ctx) => {
  const unknown = [...pattern.matchAll(/\{([^}]*)\}/g)]
    .map((m) => m[1])
    .filter((p) => !(BRANCH_PLACEHOLDERS as readonly string[]).includes(p ?? ''));
  if (unknown.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: `unknown placeholder {${unknown[0]}} (known: ${BRANCH_PLACEHOLDERS.map((p) => `{${p}}`).join(', ')})`,
    });
    return;
  }
  const problem = branchNameProblem(pattern.replace(/\{[^}]*\}/g, 'x'));
  if (problem) ctx.addIssue({ code: 'custom', message: `not a valid branch name: ${problem}` });
});

export const DEFAULT_BRANCH_PATTERN = 'uh/{operation_id}';

/** The mission's `promotion`: `none` (default), `branch`, or the branch pattern with push settings. */
export const MissionPromotionSchema = z.union([
  z.enum(['none', 'branch']),
  z.strictObject({
    branch: BranchPatternSchema.default(DEFAULT_BRANCH_PATTERN),
    push: z.boolean().default(false),
    /**
     * A remote NAME of the repository (default `origin`; for a remote repository, `origin` is its
     * URL). Never a URL or path: a mission must not choose where a worker host pushes with its
     * credentials. Credentials come from the promoting process.
     */
    remote: z
      .string()
      .regex(
        /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/,
        'must be a remote name of the repository (letters, digits, . _ -), not a URL or path',
      )
      .optional(),
  }),
]);
export type MissionPromotion = z.infer<typeof MissionPromotionSchema>;

/** The promotion a mission asks for automatically on `verified`, or null for `none`. */
export function automaticPromotion(
  setting: MissionPromotion,
): { branch: string; push: boolean; remote: string | undefined } | null {
  if (setting === 'none') return null;
  if (setting === 'branch') return { branch: DEFAULT_BRANCH_PATTERN, push: false, remote: undefined };
  return { branch: setting.branch, push: setting.push, remote: setting.remote };
}

const PersonSchema = z.lazy(() => z.strictObject({ name: z.string(), email: z.string() }));
export type Person = z.infer<typeof PersonSchema>;

export const PromotionRecordSchema = z.lazy(() =>
  z.strictObject({
    schema_version: z.literal('uh.promotion.v0'),
    operation_id: z.string(),
    /** `promoted`, or `refused` when an automatic promotion could not be made (the reason says why). */
    decision: z.enum(['promoted', 'refused']),
    reason: z.string().nullable(),
    verdict: z.string(),
    /** The branch name (without `refs/heads/`). */
    branch: z.string(),
    commit: z.string().nullable(),
    tree: z.string().nullable(),
    base_commit: z.string().nullable(),
    receipt_digest: z.string(),
    /** True when the receipt recorded the sandbox's final tree and the commit's tree equals it. */
    tree_verified: z.boolean(),
    /** Where the commit was made: the user's repository (`local`) or the mirror of a remote one. Userinfo scrubbed. */
    repository: z.strictObject({ url: z.string(), kind: z.enum(['local', 'mirror']) }),
    pushed: z.strictObject({ remote: z.string(), ref: z.string(), at: z.string() }).nullable(),
    promoted_by: z.strictObject({
      user: z.string(),
      host: z.string(),
      via: z.enum(['cli', 'inline', 'results-worker', 'api']),
    }),
    promoted_at: z.string(),
    author: PersonSchema,
    committer: PersonSchema,
    /** Whether the commit still merges cleanly into the mission ref's current head (`git merge-tree`). */
    mergeable: z
      .strictObject({ into: z.string(), head: z.string(), clean: z.boolean(), conflicts: z.array(z.string()) })
      .nullable(),
  }),
);
export type PromotionRecord = z.infer<typeof PromotionRecordSchema>;
