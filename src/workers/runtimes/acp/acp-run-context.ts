/**
 * The one explicit context of an ACP run: what it was given (plan, runtime context, pool, hints),
 * its fixed parts (event channel, transcript, permission broker) and `facts`, the only mutable
 * part, which each state of `acp-run.ts` fills in and `settle` reads.
 */
import type { Usage } from '../../../shared/contracts/runtime-result.js';
import { secretEnvValues } from '../../../shared/redact.js';
import { EventChannel } from '../../../shared/runtime/event-channel.js';
import type { LaunchPlanV1, RuntimeContextV1, RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import type { AcpClient } from './acp-client.js';
import { newTranscriptState, type AcpTranscriptState } from './acp-events.js';
import { AcpPermissionBroker } from './acp-permission-broker.js';
import type { AcpClientPool } from './acp-pool.js';
import type { AcpCommonSettings } from './acp-settings.js';
import type { AcpFailure, AcpHints } from './classify-acp.js';

export interface AcpRunSpec {
  hints: AcpHints;
  pool: AcpClientPool;
}

/** What the run has learned so far; `settle` turns it into `runtime.finished`. */
export interface AcpRunState {
  client: AcpClient | undefined;
  sessionId: string | undefined;
  /** The last prompt's stopReason; null until a prompt answered. */
  stopReason: string | null;
  failure: AcpFailure | null;
  turnTimedOut: boolean;
  usage: Usage;
  /** `session/load` is replaying history: updates are recorded, not emitted. */
  replaying: boolean;
  /** Cancels the prompt in flight (set while a turn runs). */
  cancelTurn: (() => void) | undefined;
  finished: boolean;
}

export interface AcpRun {
  readonly plan: LaunchPlanV1<AcpCommonSettings>;
  readonly config: AcpCommonSettings;
  readonly ctx: RuntimeContextV1;
  readonly spec: AcpRunSpec;
  readonly channel: EventChannel<RuntimeEventV1>;
  readonly emit: (event: RuntimeEventV1) => void;
  readonly transcript: AcpTranscriptState;
  readonly broker: AcpPermissionBroker;
  /** Messages from `send` waiting for the current turn to end. */
  readonly followUps: string[];
  /** Secret values to scrub from what the agent sends back (its `error.data`). */
  readonly secrets: readonly string[];
  readonly facts: AcpRunState;
}

export function newAcpRun(plan: LaunchPlanV1<AcpCommonSettings>, ctx: RuntimeContextV1, spec: AcpRunSpec): AcpRun {
  const channel = new EventChannel<RuntimeEventV1>();
  const emit = (event: RuntimeEventV1) => channel.push(event);
  return {
    plan,
    config: plan.config,
    ctx,
    spec,
    channel,
    emit,
    transcript: newTranscriptState(),
    broker: new AcpPermissionBroker(plan.config, ctx.workDir, emit),
    followUps: [],
    secrets: secretEnvValues({ ...ctx.env, ...plan.config.env }),
    facts: {
      client: undefined,
      sessionId: undefined,
      stopReason: null,
      failure: null,
      turnTimedOut: false,
      usage: {},
      replaying: false,
      cancelTurn: undefined,
      finished: false,
    },
  };
}

export function logEvent(level: 'info' | 'warn' | 'error', message: string): RuntimeEventV1 {
  return { type: 'runtime.log', data: { level, message } };
}
