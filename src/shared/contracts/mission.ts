import { z } from 'zod';
import { IdSchema } from './ids.js';
import { MissionPromotionSchema } from './promotion.js';
import { classifyRepositoryUrl, refProblem } from './git-inputs.js';
import { LIMITS } from './input-limits.js';
import { EgressListSchema } from './egress.js';
import { SecretRefSchema } from './secret-ref.js';

/** Capabilities a mission may require of its runtime (spec "Capability model"). */
export const CAPABILITIES = [
  'structured_events',
  'interactive_steering',
  'non_interactive_run',
  'skills',
  'subagents',
  'browser',
  'terminal',
  'file_tools',
  'sandbox_native',
  'json_output',
  'diff_output',
  'resume',
] as const;
export const CapabilitySchema = z.enum(CAPABILITIES);
export type Capability = z.infer<typeof CapabilitySchema>;

/** A repository-relative glob: never absolute, never climbing out with `..`. */
export const RelativeGlobSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(LIMITS.globChars, `must be at most ${LIMITS.globChars} characters`)
  .refine(
    (g) => !g.startsWith('/') && !/^[A-Za-z]:[\\/]/.test(g),
    'must be relative to the repository root, not absolute',
  )
  .refine((g) => !g.split(/[\\/]/).includes('..'), 'must not contain a ".." segment');

const GlobListSchema = z.array(RelativeGlobSchema).max(LIMITS.globsPerList, `at most ${LIMITS.globsPerList} globs`);

/** A bounded free-text field. */
const text = (max: number) => z.string().max(max, `must be at most ${max} characters`);

/** Allowed forms only (see git-inputs.ts); whether local paths and http are allowed is producer policy. */
export const RepositoryUrlSchema = z
  .string()
  .min(1)
  .superRefine((url, ctx) => {
    const verdict = classifyRepositoryUrl(url);
    if ('problem' in verdict) ctx.addIssue({ code: 'custom', message: verdict.problem });
  });

/** A branch, tag, `HEAD` or commit id, by the rules of `git check-ref-format`. */
export const RefSchema = z
  .string()
  .min(1)
  .superRefine((ref, ctx) => {
    const problem = refProblem(ref);
    if (problem) ctx.addIssue({ code: 'custom', message: `not a valid ref: ${problem}` });
  });

export const CheckSchema = z.strictObject({
  name: IdSchema,
  /** argv only: the first element is the program, never a shell string. */
  argv: z
    .array(text(LIMITS.argvItemChars).min(1, 'argv elements must not be empty'))
    .min(1, 'argv needs at least the program')
    .max(LIMITS.argvItems, `at most ${LIMITS.argvItems} argv elements`)
    .refine(
      (argv) => !(argv.length === 1 && /\s/.test(argv[0] ?? '')),
      'looks like a shell string; give argv as a list, e.g. ["npm", "test"]',
    ),
  timeout_seconds: z.number().int().positive().max(86_400).default(300),
});
export type Check = z.infer<typeof CheckSchema>;

const RuntimeIdSchema = IdSchema;

export const MissionSchema = z
  .strictObject({
    schema_version: z.literal('uh.mission.v0'),
    mission_id: IdSchema,
    operation_id: IdSchema,
    title: text(LIMITS.titleChars).min(1),
    objective: text(LIMITS.objectiveChars).min(1),
    context: z
      .strictObject({
        files: GlobListSchema.default([]),
        notes: text(LIMITS.notesChars).optional(),
      })
      .optional(),
    repository: z.strictObject({
      /** A git URL or a local path (relative paths resolve against the mission file's folder). */
      url: RepositoryUrlSchema,
      /** A branch, tag or commit; resolved to a commit before anything runs. */
      ref: RefSchema.default('HEAD'),
    }),
    /** One runtime id, or a list for a batch. */
    runtime: z.union([RuntimeIdSchema, z.array(RuntimeIdSchema).min(1).max(LIMITS.runtimes)]),
    /** Per runtime id, merged over the adapter manifest's runtime_config and re-parsed strictly. */
    runtime_config_overrides: z.record(RuntimeIdSchema, z.record(z.string(), z.unknown())).default({}),
    requires: z.array(CapabilitySchema).default([]),
    sandbox: z
      .strictObject({
        backend: z.literal('git-worktree').default('git-worktree'),
        env: z
          .record(
            z
              .string()
              .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an environment variable name (at most 128 characters)'),
            // In clear, or `{secret_ref: name}`: resolved on the worker (secret-ref.ts). A queued mission
            // never carries a secret-looking name's value in clear (the producer refuses it).
            z.union([text(LIMITS.envValueChars), SecretRefSchema]),
          )
          .refine((env) => Object.keys(env).length <= LIMITS.envEntries, `at most ${LIMITS.envEntries} variables`)
          .default({}),
        /** Names of the worker's environment variables passed to the runtime (`OPENAI_API_KEY`); `PREFIX_*` allowed. Values of secret-looking names are scrubbed everywhere. */
        env_passthrough: z
          .array(
            z
              .string()
              .regex(
                /^[A-Za-z_][A-Za-z0-9_]{0,127}\*?$/,
                'must be an environment variable name, or a prefix ending in *',
              ),
          )
          .max(LIMITS.envEntries)
          .optional(),
        port_range: z
          .tuple([z.number().int().min(1024).max(65535), z.number().int().min(1024).max(65535)])
          .refine(([a, b]) => a <= b, 'first port must not exceed the second')
          .optional(),
        /** OS isolation (docs/security.md "Isolation"): `required` refuses to run without it (blocked, exit 3). */
        isolation: z.enum(['auto', 'required', 'off']).default('auto'),
        /**
         * `egress` (default): the agent's own network namespace, its only way out uh's proxy, which admits
         * the hosts the runtime declares and `egress`; `none`: no network; `host`: the host's network
         * (only where the fleet allows it, UH_ALLOW_MISSION_NETWORK_HOST). `none` and `egress` need isolation.
         */
        network: z.enum(['none', 'egress', 'host']).default('egress'),
        /** Hosts the agent and the checks may reach in `egress` mode: `host[:port]`, `*.suffix[:port]` (docs/security.md). */
        egress: EgressListSchema.default([]),
        /** Lower than the host's `UH_LIMIT_*` (never higher: the host's value wins); docs/security.md#limits. */
        limits: z
          .strictObject({
            processes: z.number().int().positive().optional(),
            memory_bytes: z.number().int().positive().optional(),
            shm_bytes: z.number().int().positive().optional(),
            worktree_bytes: z.number().int().positive().optional(),
            worktree_files: z.number().int().positive().optional(),
          })
          .optional(),
        /**
         * Files the agent creates that the base commit ignores are removed before the diff and the
         * checks (docs/security.md "What is checked is what ships"); those matching one of these
         * globs stay, and are staged: in the diff, the scope check and a promotion like any change.
         * Unset (the contract digest of a mission without it is unchanged): none kept.
         */
        keep_ignored: GlobListSchema.optional(),
      })
      .default({ backend: 'git-worktree', env: {}, isolation: 'auto', network: 'egress', egress: [] }),
    scope: z
      .strictObject({
        allowed_change_globs: GlobListSchema.default(['**']),
        forbidden_globs: GlobListSchema.default([]),
      })
      .default({ allowed_change_globs: ['**'], forbidden_globs: [] }),
    verification: z.array(CheckSchema).max(LIMITS.checks, `at most ${LIMITS.checks} checks`).default([]),
    /**
     * A hidden verifier (docs/batch.md "Hidden verifiers"): a directory on the producer's host with a
     * `test.sh`, shipped with the job, copied next to the sandbox only after the agent finished and
     * the diff was taken (never visible to the agent, never in the diff), run as the last check; its
     * reward (`reward.txt` or `reward.json`, 0..1) is recorded in the receipt.
     */
    verification_hidden: z
      .union([
        text(4096).min(1),
        z.strictObject({
          path: text(4096).min(1),
          timeout_seconds: z.number().int().positive().max(86_400).default(300),
        }),
      ])
      .transform((v) => (typeof v === 'string' ? { path: v, timeout_seconds: 300 } : v))
      .optional(),
    timeout_seconds: z
      .number()
      .int()
      .positive()
      .max(7 * 86_400)
      .default(1800),
    /** `branch` or `{branch, push, remote}`: promote automatically on `verified` (docs/promotion.md). */
    promotion: MissionPromotionSchema.default('none'),
    labels: z
      .record(text(LIMITS.labelKeyChars), text(LIMITS.labelValueChars))
      .refine((labels) => Object.keys(labels).length <= LIMITS.labels, `at most ${LIMITS.labels} labels`)
      .default({}),
    /** Queue order on the workers: `ci` jobs are claimed before every waiting job; `normal` (unset) and `batch` are FIFO. */
    priority: z.enum(['ci', 'normal', 'batch']).optional(),
  })
  .superRefine((m, ctx) => {
    const names = new Set<string>();
    m.verification.forEach((c, i) => {
      if (names.has(c.name))
        ctx.addIssue({
          code: 'custom',
          path: ['verification', i, 'name'],
          message: `duplicate check name "${c.name}"`,
        });
      names.add(c.name);
    });
    const runtimes = Array.isArray(m.runtime) ? m.runtime : [m.runtime];
    for (const key of Object.keys(m.runtime_config_overrides)) {
      if (!runtimes.includes(key)) {
        ctx.addIssue({
          code: 'custom',
          path: ['runtime_config_overrides', key],
          message: `overrides a runtime the mission does not use (runtime: ${runtimes.join(', ')})`,
        });
      }
    }
  });

export type Mission = z.infer<typeof MissionSchema>;
export type MissionInput = z.input<typeof MissionSchema>;
