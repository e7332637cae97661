import type { Outcome, Usage } from '../../contracts/runtime-result.js';

/**
 * What an adapter yields while it runs. The stream ends with exactly one `runtime.finished`
 * carrying the terminal outcome; nothing may follow it. The pipeline stamps `seq`, `at` and
 * `operation_id` and turns these into `uh.event.v0` records.
 */
export type RuntimeEventV1 =
  | {
      type: 'runtime.started';
      data: { session_id?: string; thread_id?: string; turn_id?: string; pid?: number; [k: string]: unknown };
    }
  | {
      type: 'runtime.message';
      data: { text: string; role?: 'assistant' | 'user'; final?: boolean; [k: string]: unknown };
    }
  | { type: 'runtime.thought'; data: { text: string; [k: string]: unknown } }
  | { type: 'runtime.tool_call'; data: { id?: string; name: string; status?: string; [k: string]: unknown } }
  | { type: 'runtime.permission'; data: { request: unknown; answer: unknown; [k: string]: unknown } }
  | { type: 'runtime.usage'; data: Usage & { cumulative?: boolean } }
  | { type: 'runtime.plan'; data: Record<string, unknown> }
  | { type: 'runtime.log'; data: { level: 'debug' | 'info' | 'warn' | 'error'; message: string; [k: string]: unknown } }
  | { type: 'runtime.raw'; data: { source: string; line?: string; reason?: string; [k: string]: unknown } }
  | { type: 'runtime.steering'; data: { message: string; [k: string]: unknown } }
  | { type: 'runtime.finished'; data: RuntimeFinishedData };

export type RuntimeEventType = RuntimeEventV1['type'];

export interface RuntimeFinishedData {
  outcome: Outcome;
  /** The final message as resolved by the adapter: sentinel content preferred, else its native fallback. */
  final_message: string;
  final_message_source: 'sentinel' | 'native' | 'none';
  /** Ids learnt during the run, repeated here so the fold never depends on earlier events. */
  session_id?: string;
  thread_id?: string;
  turn_id?: string;
  usage?: Usage;
  /** The model the run used, when the runtime reports it (the receipt's `runtime.model`). */
  model?: string;
  /** The runtime's own version, when it reports it (the receipt's `runtime.version`). */
  runtime_version?: string;
  /**
   * `unknown` when the adapter cannot prove whether its work was dispatched (a lost reply between
   * "send" and "bound"): the pipeline then leaves the operation UNKNOWN for `uh mission recover`
   * instead of writing a receipt, and nothing is ever re-sent automatically.
   */
  dispatch?: 'bound' | 'not_sent' | 'unknown';
  [k: string]: unknown;
}
