import { z } from 'zod';
import { IdSchema } from './ids.js';
import { MissionPromotionSchema } from './promotion.js';

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
  .refine((g) => !g.startsWith('/') && !/^[A-Za-z]:[\\/]/.test(g), 'must be relative to the repository root, not absolute')
  .refine((g) => !g.split(/[\\/]/).includes('..'), 'must not contain a ".." segment');

export const CheckSchema = z.strictObject({
  name: IdSchema,
  /** argv only: the first element is the program, never a shell string. */
  argv: z
    .array(z.string().min(1, 'argv elements must not be empty'))
    .min(1, 'argv needs at least the program')
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
    title: z.string().min(1).max(200),
    objective: z.string().min(1),
    context: z
      .strictObject({
        files: z.array(RelativeGlobSchema).default([]),
        notes: z.string().optional(),
      })
      .optional(),
    repository: z.strictObject({
      /** A git URL or a local path (relative paths resolve against the mission file's folder). */
      url: z.string().min(1),
      /** A branch, tag or commit; resolved to a commit before anything runs. */
      ref: z.string().min(1).default('HEAD'),
    }),
    /** One runtime id, or a list for a batch. */
    runtime: z.union([RuntimeIdSchema, z.array(RuntimeIdSchema).min(1)]),
    /** Per runtime id, merged over the adapter manifest's runtime_config and re-parsed strictly. */
    runtime_config_overrides: z.record(RuntimeIdSchema, z.record(z.string(), z.unknown())).default({}),
    requires: z.array(CapabilitySchema).default([]),
    sandbox: z
      .strictObject({
        backend: z.literal('git-worktree').default('git-worktree'),
        env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'), z.string()).default({}),
        port_range: z
          .tuple([z.number().int().min(1024).max(65535), z.number().int().min(1024).max(65535)])
          .refine(([a, b]) => a <= b, 'first port must not exceed the second')
          .optional(),
      })
      .default({ backend: 'git-worktree', env: {} }),
    scope: z
      .strictObject({
        allowed_change_globs: z.array(RelativeGlobSchema).default(['**']),
        forbidden_globs: z.array(RelativeGlobSchema).default([]),
      })
      .default({ allowed_change_globs: ['**'], forbidden_globs: [] }),
    verification: z.array(CheckSchema).default([]),
    timeout_seconds: z.number().int().positive().max(7 * 86_400).default(1800),
    /** `branch` or `{branch, push, remote}`: promote automatically on `verified` (docs/promotion.md). */
    promotion: MissionPromotionSchema.default('none'),
    labels: z.record(z.string(), z.string()).default({}),
  })
  .superRefine((m, ctx) => {
    const names = new Set<string>();
    m.verification.forEach((c, i) => {
      if (names.has(c.name)) ctx.addIssue({ code: 'custom', path: ['verification', i, 'name'], message: `duplicate check name "${c.name}"` });
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
