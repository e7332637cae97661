import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { spawnGroup } from '../../../src/shared/process/spawn-group.js';
import { runCliJsonl, type CliJsonlItem, type CliJsonlOptions } from '../../../src/shared/transport/cli-jsonl.js';
import { BoundedLineSplitter, TailBuffer } from '../../../src/shared/transport/bounded-lines.js';
import { removeDir, tempDir } from '../../support/temp.js';

const FAKE = fileURLToPath(new URL('../../fixtures/bin/fake-jsonl.mjs', import.meta.url));
const Line = z.looseObject({ type: z.string() });
type Line = z.infer<typeof Line>;
const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

function options(args: string[], extra: Partial<CliJsonlOptions<Line>> = {}): CliJsonlOptions<Line> {
  const logDir = tempDir('uh-jsonl-');
  dirs.push(logDir);
  return {
    spawn: spawnGroup,
    argv: [process.execPath, FAKE, ...args],
    cwd: logDir,
    env: process.env,
    schema: Line,
    logDir,
    logName: 'cli',
    ...extra,
  };
}

async function collect(opts: CliJsonlOptions<Line>): Promise<CliJsonlItem<Line>[]> {
  const items: CliJsonlItem<Line>[] = [];
  for await (const item of runCliJsonl(opts)) items.push(item);
  return items;
}

function exitOf(items: CliJsonlItem<Line>[]) {
  const last = items.at(-1);
  if (last?.kind !== 'exit') throw new Error('no exit item');
  return last.exit;
}

/** Alive and not a zombie (an orphan killed in a container may wait for a reaper). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Polls until the process is gone (SIGKILL delivery is asynchronous); false after 5 s. */
async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if (!isAlive(pid)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

describe('runCliJsonl', () => {
  it('yields valid lines as messages and every bad line as a malformed item, never failing', async () => {
    const opts = options(['mixed'], { maxLineBytes: 64 * 1024 });
    const items = await collect(opts);
    expect(items[0]?.kind).toBe('spawned');
    expect(items.filter((i) => i.kind === 'message').map((i) => (i.kind === 'message' ? i.value.type : ''))).toEqual([
      'hello',
      'crlf',
      'last',
    ]);
    const bad = items.filter((i) => i.kind === 'malformed');
    expect(bad.map((i) => (i.kind === 'malformed' ? i.reason : ''))).toEqual(['not_json', 'schema', 'too_long']);
    expect(bad.every((i) => i.kind === 'malformed' && i.line.length <= 1000)).toBe(true);
    const exit = exitOf(items);
    expect(exit).toMatchObject({ exitCode: 0, signal: null, timedOut: false, aborted: false, lines: 6, malformed: 3 });
    expect(exit.message).toBe('exited with code 0');
    // The whole stdout, garbage included, is on disk.
    expect(readFileSync(join(opts.logDir, 'cli.stdout.jsonl'), 'utf8')).toContain('this is not json');
    expect(items.filter((i) => i.kind === 'exit')).toHaveLength(1);
  });

  it('reports a non-zero exit with the tail of stderr', async () => {
    const opts = options(['fail', '3'], { stderrTailBytes: 4096 });
    const exit = exitOf(await collect(opts));
    expect(exit.exitCode).toBe(3);
    expect(exit.message).toMatch(/^exited with code 3: stderr line 4\n.*\nstderr line 8$/s);
    expect(readFileSync(exit.stderrLog, 'utf8')).toContain('stderr line 1\n');
  });

  it('reports a program that cannot start as a spawn error, not a throw', async () => {
    const opts = options([], { argv: ['/nonexistent/uh-no-such-cli', '--json'] });
    const exit = exitOf(await collect(opts));
    expect(exit.spawnError?.code).toBe('ENOENT');
    expect(exit.message).toMatch(/^could not start \(ENOENT\)/);
  });

  it('kills the whole process group when aborted, grandchildren included', async () => {
    const opts = options(['hang', '']);
    const pidFile = join(opts.logDir, 'grandchild.pid');
    opts.argv = [process.execPath, FAKE, 'hang', pidFile];
    const controller = new AbortController();
    opts.signal = controller.signal;
    opts.killGraceMs = 500;
    const items: CliJsonlItem<Line>[] = [];
    for await (const item of runCliJsonl(opts)) {
      items.push(item);
      if (item.kind === 'message') controller.abort();
    }
    const exit = exitOf(items);
    expect(exit.aborted).toBe(true);
    expect(exit.message).toMatch(/^aborted and was killed/);
    expect(await gone(Number(readFileSync(pidFile, 'utf8')))).toBe(true);
  });

  it('reports a timeout', async () => {
    const opts = options(['hang', ''], { timeoutMs: 300, killGraceMs: 300 });
    const exit = exitOf(await collect(opts));
    expect(exit.timedOut).toBe(true);
    expect(exit.message).toMatch(/^timed out/);
  });

  it('kills the group when the consumer stops iterating early', async () => {
    const opts = options(['hang', '']);
    const pidFile = join(opts.logDir, 'grandchild.pid');
    opts.argv = [process.execPath, FAKE, 'hang', pidFile];
    opts.killGraceMs = 500;
    let pid: number | undefined;
    for await (const item of runCliJsonl(opts)) {
      if (item.kind === 'spawned') pid = item.pid;
      if (item.kind === 'message') break;
    }
    expect(pid).toBeTypeOf('number');
    expect(await gone(pid!)).toBe(true);
    expect(await gone(Number(readFileSync(pidFile, 'utf8')))).toBe(true);
  });

  it('streams a large output to disk with bounded memory and sees every line', async () => {
    const opts = options(['flood', '20000']);
    let count = 0;
    let last = '';
    for await (const item of runCliJsonl(opts)) {
      if (item.kind === 'message') {
        count += 1;
        last = item.value.type;
      }
    }
    expect(count).toBe(20001);
    expect(last).toBe('done');
    expect(statSync(join(opts.logDir, 'cli.stdout.jsonl')).size).toBeGreaterThan(20_000_000);
  });

  it('a consumer busy for longer than the kill grace after the program exited still gets every line', async () => {
    // A slow step between two lines (a journal write during a Redis failover): the program has
    // exited meanwhile, and its last lines wait in our buffer, not in a pipe someone holds open.
    const items: CliJsonlItem<Line>[] = [];
    for await (const item of runCliJsonl(options(['flood', '40'], { killGraceMs: 100 }))) {
      items.push(item);
      if (items.length === 2) await new Promise((resolve) => setTimeout(resolve, 600));
    }
    expect(items.filter((i) => i.kind === 'message')).toHaveLength(41);
    expect(exitOf(items)).toMatchObject({ exitCode: 0, lines: 41, malformed: 0 });
  });

  it('still parses and reports the exit when the log dir cannot be written', async () => {
    const opts = options(['flood', '2000']);
    opts.logDir = join(opts.logDir, 'missing', 'dir');
    let count = 0;
    for await (const item of runCliJsonl(opts)) if (item.kind === 'message') count += 1;
    expect(count).toBe(2001);
  });

  it('closes stdin by default and passes a given text', async () => {
    const closed = await collect(options(['stdin']));
    expect(closed.find((i) => i.kind === 'message')).toMatchObject({ value: { type: 'stdin', text: '' } });
    const given = await collect(options(['stdin'], { stdin: { text: 'piped prompt' } }));
    expect(given.find((i) => i.kind === 'message')).toMatchObject({ value: { type: 'stdin', text: 'piped prompt' } });
  });
});

describe('BoundedLineSplitter and TailBuffer', () => {
  it('splits across chunk boundaries and caps long lines', () => {
    const s = new BoundedLineSplitter(8);
    expect(s.push(Buffer.from('ab'))).toEqual([]);
    expect(s.push(Buffer.from('c\r\nde'))).toEqual([{ kind: 'line', text: 'abc' }]);
    expect(s.push(Buffer.from('0123456789'))).toEqual([]);
    expect(s.push(Buffer.from('xyz\nok\n'))).toEqual([
      { kind: 'overflow', preview: 'de0123456789', bytes: 15 },
      { kind: 'line', text: 'ok' },
    ]);
    expect(s.push(Buffer.from('tail'))).toEqual([]);
    expect(s.end()).toEqual([{ kind: 'line', text: 'tail' }]);
  });

  it('keeps only the end of stderr', () => {
    const t = new TailBuffer(10);
    for (let i = 0; i < 100; i++) t.push(Buffer.from(`line ${i}\n`));
    expect(t.text()).toBe('8\nline 99');
  });
});
