/**
 * `session/update`s for a session no run has attached yet, held for the run that will: an update
 * the agent sends right after the `session/new` reply is read before the caller's continuation
 * runs. Updates for sessions a run has detached from (retired) are dropped, not held. Bounded:
 * past `max` held updates, `hold` refuses and the caller reports the update as unrouted.
 */
export class AcpEarlyUpdates {
  private readonly held = new Map<string, unknown[]>();
  private readonly retired = new Set<string>();
  private count = 0;

  constructor(private readonly max = 1000) {}

  /** Keep an update for later. False when it must be reported instead (the buffer is full). */
  hold(sessionId: string, update: unknown): boolean {
    if (this.retired.has(sessionId)) return true; // a finished run's session: nobody will read it
    if (this.count >= this.max) return false;
    const list = this.held.get(sessionId) ?? [];
    list.push(update);
    this.held.set(sessionId, list);
    this.count += 1;
    return true;
  }

  /** The held updates of a session, in arrival order, removed from the buffer. */
  take(sessionId: string): unknown[] {
    this.retired.delete(sessionId);
    const list = this.held.get(sessionId) ?? [];
    this.held.delete(sessionId);
    this.count -= list.length;
    return list;
  }

  /** A run detached from this session: later updates for it are dropped. */
  retire(sessionId: string): void {
    this.retired.add(sessionId);
  }
}
