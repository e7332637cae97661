/**
 * Codex never gives up on an unreachable model endpoint: it prints
 * `Reconnecting... waiting for network (…)` with a growing backoff, forever. This watch stops
 * the run once such notices have gone on for `limitMs` with no other progress in between.
 */
export const WAITING_FOR_NETWORK = /waiting for network/i;

export class NetworkWaitWatch {
  private timer: NodeJS.Timeout | undefined;
  private fired = false;

  /** @param onGiveUp called once when the wait exceeds the limit (abort the child there). */
  constructor(
    private readonly limitMs: number,
    private readonly onGiveUp: () => void,
  ) {}

  /** True once the watch has stopped the run. */
  get gaveUp(): boolean {
    return this.fired;
  }

  /** Feed each top-level `error` message; any other event is progress (`progress()`). */
  notice(message: string): void {
    if (!WAITING_FOR_NETWORK.test(message) || this.fired) return;
    if (this.limitMs === 0) return this.giveUp();
    this.timer ??= setTimeout(() => this.giveUp(), this.limitMs);
  }

  /** Something other than a network notice arrived: the endpoint answers, the wait starts over. */
  progress(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  dispose(): void {
    this.progress();
  }

  private giveUp(): void {
    this.fired = true;
    this.timer = undefined;
    this.onGiveUp();
  }
}
