/**
 * One agent child per resolved work dir (and command/env), started lazily by the first run that
 * needs it, shared by the runs in that dir, never a process-wide singleton.
 *
 * Why per cwd: agents such as Hermes read their context files and "where am I" from the child's
 * own working directory, not from the session's `cwd`; one child cannot serve two work dirs.
 *
 * Entries: absent → live (refs ≥ 0) → closed. A released child with no refs is closed after
 * `idleMs` (0: at once). A poisoned or dead child is never handed out again: the next acquire
 * starts a new one.
 */
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { AcpClient, type AcpClientOptions } from './acp-client.js';

interface Entry {
  client: AcpClient;
  refs: number;
  idleTimer: NodeJS.Timeout | undefined;
}

export class AcpClientPool {
  private readonly entries = new Map<string, Entry>();

  /** The resolved work dir (symlinks followed), the pool's key. Never empty. */
  static resolveCwd(cwd: string): string {
    const absolute = resolve(cwd || '.');
    try {
      return realpathSync(absolute);
    } catch {
      return absolute;
    }
  }

  /**
   * A live client for this work dir, started if needed. `identity` (the command and the config's
   * own env, not the whole inherited environment) must match too: two commands never share a child.
   */
  acquire(options: AcpClientOptions, identity: unknown = options.argv): AcpClient {
    const cwd = AcpClientPool.resolveCwd(options.cwd);
    const key = JSON.stringify([cwd, identity]);
    const existing = this.entries.get(key);
    if (existing && existing.client.healthy) {
      if (existing.idleTimer) clearTimeout(existing.idleTimer);
      existing.idleTimer = undefined;
      existing.refs += 1;
      return existing.client;
    }
    if (existing) {
      this.entries.delete(key);
      void existing.client.close();
    }
    const client = new AcpClient({ ...options, cwd });
    const entry: Entry = { client, refs: 1, idleTimer: undefined };
    this.entries.set(key, entry);
    void client.connection.closed.then(() => {
      // A child that died is dropped at once; the next run starts a fresh one.
      if (this.entries.get(key) === entry && entry.refs === 0) this.entries.delete(key);
    });
    return client;
  }

  /** Give a client back. Resolves once it is closed when it was poisoned, dead or idle with `idleMs` 0. */
  async release(client: AcpClient, idleMs: number): Promise<void> {
    for (const [key, entry] of this.entries) {
      if (entry.client !== client) continue;
      entry.refs = Math.max(0, entry.refs - 1);
      if (entry.refs > 0 && client.healthy) return;
      if (!client.healthy || idleMs === 0) {
        if (entry.refs === 0 || !client.healthy) this.entries.delete(key);
        await client.close();
        return;
      }
      entry.idleTimer = setTimeout(() => {
        if (this.entries.get(key) === entry && entry.refs === 0) {
          this.entries.delete(key);
          void client.close();
        }
      }, idleMs);
      entry.idleTimer.unref();
      return;
    }
    await client.close(); // not pooled any more (replaced after poisoning)
  }

  /** Number of live children (for tests and `uh doctor`). */
  get size(): number {
    return this.entries.size;
  }

  /** Close every child (worker shutdown). */
  async closeAll(): Promise<void> {
    const all = [...this.entries.values()];
    this.entries.clear();
    for (const entry of all) if (entry.idleTimer) clearTimeout(entry.idleTimer);
    await Promise.all(all.map((e) => e.client.close()));
  }
}
