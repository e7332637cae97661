import { z } from 'zod';

/** Every event type the pipeline and adapters emit. Adapters emit only `runtime.*`. */
export const EVENT_TYPES = [
  'operation.queued',
  'operation.started',
  'operation.unknown',
  'sandbox.created',
  'sandbox.removed',
  'sandbox.kept',
  'runtime.started',
  'runtime.message',
  'runtime.thought',
  'runtime.tool_call',
  'runtime.permission',
  'runtime.usage',
  'runtime.plan',
  'runtime.log',
  'runtime.raw',
  'runtime.steering',
  'runtime.finished',
  'limits.exceeded',
  'diff.captured',
  'diff.stopped',
  'scope.checked',
  'verification.check',
  'operation.cancel_requested',
  'operation.completed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** `uh.event.v0`: appended in order to `events.jsonl` and published live. */
export const EventSchema = z.strictObject({
  seq: z.number().int().nonnegative(),
  at: z.string(),
  operation_id: z.string(),
  type: z.enum(EVENT_TYPES),
  data: z.record(z.string(), z.unknown()),
});
export type UhEvent = z.infer<typeof EventSchema>;
