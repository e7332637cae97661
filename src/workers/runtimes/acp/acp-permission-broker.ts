/**
 * Answers `session/request_permission` for one run, by the declared policy, and records every
 * request and answer as a `runtime.permission` audit event.
 *
 * `sandbox` / `deny`: decided at once (one event with request and answer).
 * `ask`: an event with `answer: null, pending: true`, then the answer from `send` ("allow",
 * "deny", or an offered option id), or a deny after `permission_timeout_ms`, or `cancelled` when
 * the run is cancelled or the agent withdraws the request; a second event records the answer.
 * After a cancel every request, pending or new, is answered `cancelled`.
 */
import type { RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import {
  CANCELLED_ANSWER_WIRE,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
} from './acp-protocol.js';
import {
  answerAllows,
  answerFromReply,
  decidePermission,
  permissionAnswer,
  toolCallPaths,
  type PermissionPolicy,
} from './acp-permissions.js';

interface Pending {
  request: RequestPermissionRequest;
  settle: (answer: RequestPermissionResponse, decidedBy: string) => void;
}

export class AcpPermissionBroker {
  private readonly pending: Pending[] = [];
  private cancelled = false;

  constructor(
    private readonly config: { permission_policy: PermissionPolicy; permission_timeout_ms: number },
    private readonly workDir: string,
    private readonly emit: (event: RuntimeEventV1) => void,
  ) {}

  /** Answer one request (never rejects). */
  handle(request: RequestPermissionRequest, signal: AbortSignal): Promise<RequestPermissionResponse> {
    const policy = this.config.permission_policy;
    if (this.cancelled)
      return Promise.resolve(this.record(request, CANCELLED_ANSWER_WIRE, 'cancel', 'the run was cancelled'));
    if (policy !== 'ask') {
      const decision = decidePermission(policy, request.toolCall, this.workDir);
      return Promise.resolve(
        this.record(request, permissionAnswer(request.options, decision.allow), policy, decision.reason),
      );
    }
    this.emit({
      type: 'runtime.permission',
      data: { request: this.summary(request), answer: null, pending: true, policy },
    });
    return new Promise((resolve) => {
      const timer = setTimeout(
        () => entry.settle(permissionAnswer(request.options, false), 'timeout'),
        this.config.permission_timeout_ms,
      );
      const onAbort = () => entry.settle(CANCELLED_ANSWER_WIRE, 'withdrawn by the agent');
      const entry: Pending = {
        request,
        settle: (answer, decidedBy) => {
          const index = this.pending.indexOf(entry);
          if (index === -1) return;
          this.pending.splice(index, 1);
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          resolve(this.record(request, answer, decidedBy, `answered by ${decidedBy}`));
        },
      };
      this.pending.push(entry);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** A message from `send`: answers the oldest pending request when it is an answer. */
  answerPending(message: string): boolean {
    const first = this.pending[0];
    if (!first) return false;
    const answer = answerFromReply(message, first.request);
    if (!answer) return false;
    first.settle(answer, 'send');
    return true;
  }

  /** The run is being cancelled: every pending and later request is answered `cancelled`. */
  cancelAll(): void {
    this.cancelled = true;
    for (const entry of [...this.pending]) entry.settle(CANCELLED_ANSWER_WIRE, 'cancel');
  }

  private record(
    request: RequestPermissionRequest,
    answer: RequestPermissionResponse,
    decidedBy: string,
    reason: string,
  ): RequestPermissionResponse {
    this.emit({
      type: 'runtime.permission',
      data: {
        request: this.summary(request),
        answer,
        allowed: answerAllows(answer, request.options),
        decided_by: decidedBy,
        reason,
        policy: this.config.permission_policy,
      },
    });
    return answer;
  }

  private summary(request: RequestPermissionRequest) {
    const tool = request.toolCall;
    return {
      session_id: request.sessionId,
      tool_call_id: tool.toolCallId,
      ...(tool.title ? { title: tool.title } : {}),
      ...(tool.kind ? { kind: tool.kind } : {}),
      paths: toolCallPaths(tool, this.workDir),
      options: request.options.map((o) => ({ optionId: o.optionId, kind: o.kind, name: o.name })),
    };
  }
}
