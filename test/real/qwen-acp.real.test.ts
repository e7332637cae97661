/**
 * The generic `acp` runtime against a REAL agent: Qwen Code 0.15.10 (`qwen --acp`, the last
 * release whose engines allow Node 20; pinned in scripts/install-real-runtimes.sh), talking to our scripted
 * chat-completions server on 127.0.0.1. The model asks for `write_file`; Qwen asks us for
 * permission (after `session/set_mode` to `default`, its ask-before-edit mode); the sandbox
 * policy allows the path inside the work dir; Qwen writes the file for real.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acpAdapter } from '../../src/workers/runtimes/acp/acp-adapter.js';
import { git, makeRepo } from '../support/git-repo.js';
import { runAdapter, terminalOf } from '../support/run-adapter.js';
import { tempDir } from '../support/temp.js';
import { realRuntimeBinary } from '../support/real-runtimes.js';
import { ofType, readJournal } from '../workers/runtimes/acp/fake-acp.js';

// Installed by scripts/install-real-runtimes.sh (pinned), like the other real runtimes.
const QWEN = realRuntimeBinary('qwen');
const SERVER = fileURLToPath(new URL('../fixtures/chat-completions-server/server.mjs', import.meta.url));
const API_KEY = 'sk-qwen-test-3c9e1f0a';

let server: ChildProcess;
let port: number;
const root = tempDir('uh-qwen-');
const workDir = makeRepo({ 'README.md': '# qwen\n' }, join(root, 'work'));
const home = join(root, 'home');
const journal = join(root, 'model-journal.jsonl');

beforeAll(async () => {
  mkdirSync(join(home, '.qwen'), { recursive: true });
  writeFileSync(
    join(home, '.qwen', 'settings.json'),
    JSON.stringify({
      security: { auth: { selectedType: 'openai' } },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
      model: { name: 'scripted-model' },
    }),
  );
  server = spawn(
    process.execPath,
    [SERVER, 'write-file', join(workDir, 'hello.txt'), 'hello from qwen\n', '--journal', journal],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const first = await new Promise<string>((resolve) =>
    createInterface({ input: server.stdout! }).once('line', resolve),
  );
  port = (JSON.parse(first) as { port: number }).port;
});
afterAll(() => {
  server?.stdin?.end();
});

describe('acp runtime against Qwen Code --acp (real agent, scripted model)', () => {
  it('edits a file in the work dir through write_file after a permission request', async () => {
    const r = await runAdapter(
      acpAdapter,
      {
        command: [QWEN, '--acp'],
        env: {
          OPENAI_API_KEY: API_KEY,
          OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`,
          OPENAI_MODEL: 'scripted-model',
        },
        auth_method_id: 'openai',
        auth_mode: 'upfront',
        session_mode: 'default',
        request_timeout_ms: 60_000,
      },
      { env: { ...process.env, HOME: home }, workDir, prompt: 'Create hello.txt saying hello.' },
    );
    const t = terminalOf(r.events);
    expect(t.outcome).toMatchObject({ status: 'completed', raw: 'stop:end_turn' });
    expect(ofType(r.events, 'runtime.started')[0]?.data.agent).toMatchObject({ name: 'qwen-code', version: '0.15.10' });
    expect(ofType(r.events, 'runtime.log').map((e) => e.data.message)).toEqual(
      expect.arrayContaining(['authenticate openai: accepted', 'session mode set to default']),
    );
    // The permission came after session/set_mode; the sandbox allowed it with Qwen's allow-ONCE option.
    const [permission] = ofType(r.events, 'runtime.permission');
    expect(permission?.data).toMatchObject({
      request: { kind: 'edit', paths: [join(workDir, 'hello.txt')] },
      answer: { outcome: { outcome: 'selected', optionId: 'proceed_once' } },
      allowed: true,
    });
    expect(ofType(r.events, 'runtime.tool_call').at(-1)?.data).toMatchObject({
      name: 'Writing to hello.txt',
      status: 'completed',
    });
    // A real edit, and nothing else, in the worktree.
    expect(readFileSync(join(workDir, 'hello.txt'), 'utf8')).toBe('hello from qwen\n');
    expect(git(workDir, 'status', '--porcelain', '--untracked-files=all')).toBe('?? hello.txt');
    expect(t.final_message).toBe('Wrote hello.txt with write_file.');
    expect(JSON.stringify(r.events)).not.toContain(API_KEY);
    // The model really was ours: the second call carried the tool result.
    const modelCalls = readJournal(journal).filter((c) => Array.isArray(c.request.tools) && c.request.tools.length > 0);
    expect(modelCalls.some((c) => c.request.messages.some((m: { role: string }) => m.role === 'tool'))).toBe(true);
  });
});
