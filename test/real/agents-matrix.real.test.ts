/**
 * The real-agent matrix: every real peer the tests install runs missions through the built CLI
 * (`uh mission run`, a child process) under bubblewrap (`isolation: bwrap` in every receipt),
 * installed the way a user's `npm i -g` under nvm puts it (`~/.nvm/versions/node/vX/bin/<agent>` a
 * symlink into `../lib/node_modules/<pkg>`, nvm's own `node` in that bin, found first on PATH) in a
 * fake `$HOME` made for the test under /home (not /tmp: inside the sandbox /tmp and $HOME are
 * private, so this is the layout uh must re-expose), configured as each agent's docs tell users
 * (codex: `~/.codex/config.toml`; pi: `~/.pi/agent/models.json`; Gemini: `~/.gemini/settings.json`;
 * Qwen: `~/.qwen/settings.json` + `OPENAI_*`; opencode: `OPENCODE_CONFIG_CONTENT` +
 * `XDG_DATA_HOME`; claude-code-acp: `ANTHROPIC_*` + `HOME`; codex-acp: `CODEX_HOME=~/.codex`),
 * against scripted model servers on 127.0.0.1:0. Per agent: an edit made by the agent's own
 * file tool as a real model would call it (pi `write`, opencode `write`, Qwen `write_file` under
 * the work dir its prompt names, Gemini `write_file`, claude-code-acp `Write`, codex-acp
 * `apply_patch`; codex exec / app-server a shell command), a 401 → `blocked`, and a cancel
 * (SIGINT to the CLI once the model was called → exit 4, `cancelled`).
 * The docs/runtimes/*.md recipes are these configurations. Needs bwrap (fails without it).
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { requireBwrap, treeFingerprint } from '../security/isolation-helpers.js';
import { startAnthropicServer, type AnthropicServer } from '../support/anthropic-server.js';
import { startChatServer, type ChatServer } from '../support/chat-server.js';
import { runCli } from '../support/cli.js';
import { startGeminiServer, type GeminiServer } from '../support/gemini-server.js';
import { makeRepo } from '../support/git-repo.js';
import { runtimesDir } from '../support/real-runtimes.js';
import { startResponsesServer, type ResponsesServer } from '../support/responses-server.js';
import { removeDir, tempDir } from '../support/temp.js';

const KEY = 'sk-uh-matrix-7f3a9c21';
const GEMINI_KEY = 'AIzaMatrixScriptedKey-0123456789abcdef';
const SDK_DIR = fileURLToPath(new URL('../../node_modules/@agentclientprotocol/sdk', import.meta.url));
const created: string[] = [];
let home: string;
let prefixBin: string;
let responses: ResponsesServer;
let chat: ChatServer;
let gemini: GeminiServer;
let anthropic: AnthropicServer;
let counter = 0;
let homeBefore: string;
// `.nvm`: the installs. Every agent's home is a copy (docs/security.md "Agent state"): the ACP
// agents' per operation, codex's, codex-app-server's and pi's per tenant in the state dir.
const notInstalls = (rel: string) => ['.nvm'].some((d) => rel === d || rel.startsWith(`${d}/`));

/** `npm i -g` under nvm: the packages in `<prefix>/lib/node_modules`, bin symlinks into them, nvm's node. */
function installNvmPrefix(): string {
  const prefix = join(home, '.nvm', 'versions', 'node', `v${process.versions.node}`);
  const modules = join(prefix, 'lib', 'node_modules');
  mkdirSync(join(prefix, 'lib'), { recursive: true });
  // Hard links (same filesystem): a real copy in the home without copying 700 MB.
  execFileSync('cp', ['-al', join(runtimesDir(), 'node_modules'), modules]);
  mkdirSync(join(modules, '@agentclientprotocol'), { recursive: true });
  execFileSync('cp', ['-al', SDK_DIR, join(modules, '@agentclientprotocol', 'sdk')]);
  const bin = join(prefix, 'bin');
  mkdirSync(bin);
  const hostBin = join(runtimesDir(), 'node_modules', '.bin');
  for (const name of readdirSync(hostBin)) {
    symlinkSync(readlinkSync(join(hostBin, name)).replace(/^\.\.\//, '../lib/node_modules/'), join(bin, name));
  }
  linkSync(process.execPath, join(bin, 'node'));
  return bin;
}

// codex's model catalog entry for the custom provider's model: its tools follow the model's
// metadata, and apply_patch is offered only when the model declares it (codex's bundled models do).
const CODEX_CATALOG = {
  models: [
    {
      slug: 'uh-scripted',
      display_name: 'uh scripted model',
      description: 'the scripted Responses server',
      default_reasoning_level: null,
      supported_reasoning_levels: [],
      shell_type: 'shell_command',
      visibility: 'list',
      supported_in_api: true,
      priority: 1,
      upgrade: null,
      base_instructions: 'You are a coding agent.',
      supports_reasoning_summaries: false,
      support_verbosity: false,
      default_verbosity: null,
      apply_patch_tool_type: 'freeform',
      truncation_policy: { mode: 'bytes', limit: 10000 },
      supports_parallel_tool_calls: false,
      context_window: 128000,
      experimental_supported_tools: [],
    },
  ],
};

function seedConfigs(): void {
  mkdirSync(join(home, '.codex'));
  writeFileSync(
    join(home, '.codex', 'config.toml'),
    [
      'model = "uh-scripted"',
      'model_provider = "uhmock"',
      // codex offers a model its apply_patch tool only when the model's metadata declares it; a
      // custom provider's model gets it from a catalog entry (path relative to CODEX_HOME).
      'model_catalog_json = "uh-models.json"',
      '[model_providers.uhmock]',
      'name = "uh scripted responses server"',
      `base_url = "${responses.url}"`,
      'wire_api = "responses"',
      'env_key = "UH_MOCK_API_KEY"',
      'request_max_retries = 0',
      'stream_max_retries = 0',
      '',
    ].join('\n'),
  );
  writeFileSync(join(home, '.codex', 'uh-models.json'), JSON.stringify(CODEX_CATALOG));
  const piDir = join(home, '.pi', 'agent');
  mkdirSync(piDir, { recursive: true });
  const piModels = { baseUrl: chat.url, api: 'openai-completions', apiKey: 'UH_MOCK_API_KEY', models: [{ id: 'm' }] };
  writeFileSync(join(piDir, 'models.json'), JSON.stringify({ providers: { uhmock: piModels } }));
  writeFileSync(
    join(piDir, 'settings.json'),
    JSON.stringify({ retry: { enabled: false, provider: { maxRetries: 0 } } }),
  );
  const quiet = { privacy: { usageStatisticsEnabled: false }, telemetry: { enabled: false } };
  mkdirSync(join(home, '.gemini'));
  const general = { disableAutoUpdate: true, disableUpdateNag: true, maxAttempts: 1, retryFetchErrors: false };
  const security = { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: false } };
  const geminiSettings = { ...quiet, security, general, model: { name: 'gemini-2.5-flash' } };
  writeFileSync(join(home, '.gemini', 'settings.json'), JSON.stringify(geminiSettings));
  mkdirSync(join(home, '.qwen'));
  const qwenSettings = { ...quiet, security: { auth: { selectedType: 'openai' } }, model: { name: 'm' } };
  writeFileSync(join(home, '.qwen', 'settings.json'), JSON.stringify(qwenSettings));
  mkdirSync(join(home, '.local', 'share'), { recursive: true });
}

beforeAll(async () => {
  requireBwrap();
  home = mkdtempSync('/home/uh-matrix-home-');
  created.push(home);
  [responses, chat, gemini, anthropic] = await Promise.all([
    startResponsesServer({ apiKey: KEY }),
    startChatServer(),
    startGeminiServer(),
    startAnthropicServer(),
  ]);
  prefixBin = installNvmPrefix();
  seedConfigs();
  homeBefore = treeFingerprint(home, notInstalls);
}, 120_000);
afterAll(async () => {
  await Promise.all([responses?.close(), chat?.close(), gemini?.close(), anthropic?.close()]);
  created.forEach(removeDir);
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  receipt: { status: string; isolation: { kind: string }; outcome: { message?: string }; final_message?: string };
  patch: string;
}

/** One mission through `uh mission run` as the user with the fake home and nvm's bin first on PATH. */
async function mission(
  runtime: string,
  config: Record<string, unknown>,
  cancelWhen?: (opDir: string) => Promise<boolean>,
) {
  const operationId = `op-matrix-${process.pid}-${++counter}`;
  const repo = makeRepo({ 'README.md': '# matrix\n' });
  const dir = tempDir('uh-matrix-mission-');
  const stateDir = tempDir('uh-matrix-state-');
  const cacheDir = tempDir('uh-matrix-cache-');
  created.push(repo, dir, stateDir, cacheDir);
  const spec = {
    schema_version: 'uh.mission.v0',
    mission_id: 'm-matrix',
    operation_id: operationId,
    title: 'Real agent matrix',
    objective: 'Create hello.txt saying hello.',
    repository: { url: repo, ref: 'main' },
    runtime,
    runtime_config_overrides: { [runtime]: config },
    timeout_seconds: 150,
  };
  writeFileSync(join(dir, 'mission.yaml'), stringify(spec));
  const env = { UH_CACHE_DIR: cacheDir, HOME: home, PATH: `${prefixBin}:/usr/local/bin:/usr/bin:/bin` };
  const args = ['mission', 'run', join(dir, 'mission.yaml'), '--json', '--state-dir', stateDir];
  const opDir = join(stateDir, 'operations', operationId);
  const ready = cancelWhen && (() => cancelWhen(opDir));
  const r = await runCli(args, { cwd: repo, env, onSpawn: ready && ((pid) => void cancelLater(pid, ready)) });
  const receipt = JSON.parse(readFileSync(join(opDir, 'receipt.json'), 'utf8')) as Run['receipt'];
  const patch = existsSync(join(opDir, 'diff.patch')) ? readFileSync(join(opDir, 'diff.patch'), 'utf8') : '';
  const run: Run = { ...r, receipt, patch };
  expect(run.receipt.isolation.kind).toBe('bwrap');
  expect(run.stdout + run.patch).not.toContain(KEY);
  return run;
}

/** SIGINT (Ctrl-C) to the CLI once the scripted model was called: the agent has a turn in flight. */
async function cancelLater(pid: number, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline && !(await ready())) await new Promise((r) => setTimeout(r, 100));
  process.kill(pid, 'SIGINT');
}

const why = (r: Run) => `${r.receipt.status}: ${r.receipt.outcome.message}\n${r.stderr}`;
const bin = (name: string) => join(prefixBin, name);

function expectEdited(r: Run, text: string): void {
  expect(r.receipt.status, why(r)).toBe('completed');
  expect(r.code).toBe(0);
  expect(r.patch).toContain(`+${text}`);
}
function expectBlocked(r: Run): void {
  expect(r.receipt.status, why(r)).toBe('blocked');
  expect(r.code).toBe(3);
}
function expectCancelled(r: Run): void {
  expect(r.receipt.status, why(r)).toBe('cancelled');
  expect(r.code).toBe(4);
}

const EXEC_EDIT = (text: string) => ({
  kind: 'function_call' as const,
  name: 'exec_command',
  arguments: { cmd: `printf '${text}\\n' > hello.txt` },
  call_id: 'call_edit_1',
});

describe.each([
  ['codex exec', 'codex'],
  ['codex app-server', 'codex-app-server'],
])('%s from an nvm prefix, ~/.codex seeded, through uh mission run under bwrap', (_name, runtime) => {
  const config = (key = KEY) => ({
    binary: bin('codex'),
    codex_home: join(home, '.codex'),
    env: { UH_MOCK_API_KEY: key },
  });
  it('edits a file', async () => {
    await responses.script([EXEC_EDIT(`hello from ${runtime}`), { kind: 'message', text: 'Created hello.txt.' }]);
    expectEdited(await mission(runtime, config()), `hello from ${runtime}`);
  }, 200_000);
  it('a 401 from the provider is blocked', async () => {
    await responses.script([{ kind: 'http', status: 401, body: { error: { message: 'bad key' } } }]);
    expectBlocked(await mission(runtime, config('sk-wrong')));
  }, 200_000);
  it('Ctrl-C mid-turn cancels', async () => {
    await responses.script([{ kind: 'hang' }]);
    expectCancelled(await mission(runtime, config(), async () => (await responses.requests()).length > 0));
  }, 200_000);
});

describe('pi from an nvm prefix, ~/.pi/agent seeded, through uh mission run under bwrap', () => {
  const config = (key = KEY) => ({ binary: bin('pi'), provider: 'uhmock', model: 'm', env: { UH_MOCK_API_KEY: key } });
  it('edits a file', async () => {
    const write = { id: 'call_w', name: 'write', arguments: { path: 'hello.txt', content: 'hello from pi\n' } };
    await chat.script(
      [
        { kind: 'tool_calls', calls: [write] },
        { kind: 'text', text: 'Created hello.txt.' },
      ],
      KEY,
    );
    expectEdited(await mission('pi', config()), 'hello from pi');
  }, 200_000);
  it('a 401 from the provider is blocked', async () => {
    await chat.script([{ kind: 'text', text: 'unused' }], KEY);
    expectBlocked(await mission('pi', config('sk-wrong')));
  }, 200_000);
  it('Ctrl-C mid-turn cancels', async () => {
    await chat.script([{ kind: 'hang' }], KEY);
    expectCancelled(await mission('pi', config(), async () => (await chat.requests()).length > 0));
  }, 200_000);
});

const opencode = (key = KEY) => {
  const provider = (baseURL: string, model: string) => ({
    npm: '@ai-sdk/openai-compatible',
    options: { baseURL, apiKey: '{env:MY_API_KEY}', maxRetries: 0 },
    models: { [model]: { tool_call: true } },
  });
  const config = {
    autoupdate: false,
    share: 'disabled',
    model: 'mine/m',
    small_model: 'title/none',
    provider: { mine: provider(chat.url, 'm'), title: provider('http://127.0.0.1:9/v1', 'none') },
    permission: { edit: 'ask', bash: 'ask', webfetch: 'deny' },
  };
  return {
    command: [bin('opencode'), 'acp'],
    env: {
      OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
      MY_API_KEY: key,
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
      OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
      OPENCODE_DISABLE_SHARE: '1',
      XDG_DATA_HOME: join(home, '.local', 'share'),
    },
    request_timeout_ms: 90_000,
  };
};
const qwen = (key = KEY) => ({
  command: [bin('qwen'), '--acp'],
  env: { HOME: home, OPENAI_API_KEY: key, OPENAI_BASE_URL: chat.url, OPENAI_MODEL: 'm' },
  auth_method_id: 'openai',
  auth_mode: 'upfront',
  session_mode: 'default',
  request_timeout_ms: 60_000,
});
const geminiCli = (key = GEMINI_KEY) => ({
  command: [bin('gemini'), '--acp'],
  env: { HOME: home, GEMINI_API_KEY: key, GOOGLE_GEMINI_BASE_URL: gemini.url },
  auth_method_id: 'gemini-api-key',
  request_timeout_ms: 60_000,
});

describe('opencode acp from an nvm prefix through uh mission run under bwrap', () => {
  it('edits a file', async () => {
    const write = {
      id: 'call_w',
      name: 'write',
      arguments: { filePath: 'hello.txt', content: 'hello from opencode\n' },
    };
    await chat.script(
      [
        { kind: 'tool_calls', calls: [write] },
        { kind: 'text', text: 'Wrote hello.txt.' },
      ],
      KEY,
    );
    expectEdited(await mission('acp', opencode()), 'hello from opencode');
  }, 200_000);
  it('a 401 from the provider is blocked', async () => {
    await chat.script([{ kind: 'text', text: 'unused' }], KEY);
    expectBlocked(await mission('acp', opencode('sk-wrong')));
  }, 200_000);
  it('Ctrl-C mid-turn cancels', async () => {
    await chat.script([{ kind: 'hang' }], KEY);
    expectCancelled(await mission('acp', opencode(), async () => (await chat.requests()).length > 0));
  }, 200_000);
});

describe('qwen --acp from an nvm prefix, ~/.qwen seeded, through uh mission run under bwrap', () => {
  it('edits a file', async () => {
    // Qwen's write_file takes an absolute path only: the model writes it under the directory the
    // agent's environment context names (the scripted server's {{workdir}}).
    const write = {
      id: 'call_w',
      name: 'write_file',
      arguments: { file_path: '{{workdir}}/hello.txt', content: 'hello from qwen\n' },
    };
    await chat.script(
      [
        { kind: 'tool_calls', calls: [write] },
        { kind: 'text', text: 'Created hello.txt.' },
      ],
      KEY,
    );
    const r = await mission('acp', qwen());
    expectEdited(r, 'hello from qwen');
    expect((await chat.requests())[1]?.tool_results.join('\n')).toContain('hello.txt');
  }, 200_000);
  it('a 401 from the provider is blocked', async () => {
    await chat.script([{ kind: 'text', text: 'unused' }], KEY);
    expectBlocked(await mission('acp', qwen('sk-wrong')));
  }, 200_000);
  it('Ctrl-C mid-turn cancels', async () => {
    await chat.script([{ kind: 'hang' }], KEY);
    expectCancelled(await mission('acp', qwen(), async () => (await chat.requests()).length > 0));
  }, 200_000);
});

describe('gemini --acp from an nvm prefix, ~/.gemini seeded, through uh mission run under bwrap', () => {
  it('edits a file', async () => {
    const write = { name: 'write_file', args: { file_path: 'hello.txt', content: 'hello from gemini\n' } };
    await gemini.script(
      [
        { kind: 'function_calls', calls: [write] },
        { kind: 'text', text: 'Created hello.txt.' },
      ],
      GEMINI_KEY,
    );
    const r = await mission('acp', geminiCli());
    expectEdited(r, 'hello from gemini');
    expect((await gemini.requests()).flatMap((q) => q.function_responses)).toContain('write_file');
  }, 200_000);
  it('a 401 from the provider is blocked', async () => {
    await gemini.script([{ kind: 'text', text: 'unused' }], GEMINI_KEY);
    expectBlocked(await mission('acp', geminiCli('the-wrong-key')));
  }, 200_000);
  it('Ctrl-C mid-turn cancels', async () => {
    await gemini.script([{ kind: 'hang' }], GEMINI_KEY);
    expectCancelled(await mission('acp', geminiCli(), async () => (await gemini.requests()).length > 0));
  }, 200_000);
});

// Claude Code over ACP, its API key and base URL by env as Claude Code's docs say; IS_SANDBOX=1
// because the tests run as root (Claude Code refuses its bypass mode as root otherwise);
// CLAUDE_CODE_MAX_RETRIES=0: a 401 ends the turn at once instead of after ten retries.
const claudeCode = (key = KEY) => ({
  command: [bin('claude-code-acp')],
  env: {
    HOME: home,
    ANTHROPIC_API_KEY: key,
    ANTHROPIC_BASE_URL: anthropic.url,
    CLAUDE_CODE_MAX_RETRIES: '0',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    IS_SANDBOX: '1',
  },
  request_timeout_ms: 60_000,
});
// codex-acp reads the same ~/.codex/config.toml as codex (the provider is the scripted server).
const codexAcp = (key = KEY) => ({
  command: [bin('codex-acp')],
  env: { CODEX_HOME: join(home, '.codex'), UH_MOCK_API_KEY: key },
  request_timeout_ms: 60_000,
});

describe('claude-code-acp from an nvm prefix, HOME seeded, through uh mission run under bwrap', () => {
  it('edits a file', async () => {
    const write = { id: 'toolu_w', name: 'Write', input: { file_path: 'hello.txt', content: 'hello from claude\n' } };
    await anthropic.script(
      [
        { kind: 'tool_use', calls: [write] },
        { kind: 'text', text: 'Created hello.txt.' },
      ],
      KEY,
    );
    expectEdited(await mission('acp', claudeCode()), 'hello from claude');
  }, 200_000);
  it('a 401 from the provider is blocked', async () => {
    await anthropic.script([{ kind: 'text', text: 'unused' }], KEY);
    expectBlocked(await mission('acp', claudeCode('sk-wrong')));
  }, 200_000);
  it('Ctrl-C mid-turn cancels', async () => {
    await anthropic.script([{ kind: 'hang' }], KEY);
    expectCancelled(await mission('acp', claudeCode(), async () => (await anthropic.requests()).length > 0));
  }, 200_000);
});

describe('codex-acp from an nvm prefix, ~/.codex seeded, through uh mission run under bwrap', () => {
  it('edits a file', async () => {
    const patch = ['*** Begin Patch', '*** Add File: hello.txt', '+hello from codex-acp', '*** End Patch', ''].join(
      '\n',
    );
    await responses.script([
      { kind: 'custom_tool_call', name: 'apply_patch', input: patch, call_id: 'call_patch_1' },
      { kind: 'message', text: 'Created hello.txt.' },
    ]);
    const r = await mission('acp', codexAcp());
    expectEdited(r, 'hello from codex-acp');
    // codex offered the model its apply_patch tool (from the catalog entry) and ran the patch itself.
    const [first, second] = await responses.requests();
    expect(first?.body.tools).toContainEqual(expect.objectContaining({ type: 'custom', name: 'apply_patch' }));
    expect(JSON.stringify(second?.body.input)).toContain('"custom_tool_call_output"');
  }, 200_000);
  it('a 401 from the provider is blocked', async () => {
    await responses.script([{ kind: 'http', status: 401, body: { error: { message: 'bad key' } } }]);
    expectBlocked(await mission('acp', codexAcp('sk-wrong')));
  }, 200_000);
  it('Ctrl-C mid-turn cancels', async () => {
    await responses.script([{ kind: 'hang' }]);
    expectCancelled(await mission('acp', codexAcp(), async () => (await responses.requests()).length > 0));
  }, 200_000);
});

describe('the ACP SDK example agent from an nvm prefix through uh mission run under bwrap', () => {
  const agent = () => ({
    command: [
      'node',
      join(
        home,
        '.nvm',
        'versions',
        'node',
        `v${process.versions.node}`,
        'lib',
        'node_modules',
        '@agentclientprotocol',
        'sdk',
        'dist',
        'examples',
        'agent.js',
      ),
    ],
  });
  it('completes its scripted turn (its edit outside the work dir denied by the policy)', async () => {
    const r = await mission('acp', agent());
    expect(r.receipt.status, why(r)).toBe('completed');
    expect(r.receipt.final_message).toContain("I'll skip the configuration update.");
  }, 200_000);
  // It has no model to answer 401 and its only edit is outside the work dir (hard-coded): a cancel
  // once its first tool call is in the operation's events (it waits ~1 s between steps).
  it('Ctrl-C mid-turn cancels', async () => {
    const toolCallSeen = async (opDir: string) => {
      const events = join(opDir, 'events.jsonl');
      return existsSync(events) && readFileSync(events, 'utf8').includes('"runtime.tool_call"');
    };
    expectCancelled(await mission('acp', agent(), toolCallSeen));
  }, 200_000);
});

describe('the configured home', () => {
  it('was never written by any agent: ACP ones wrote per-operation copies, codex and pi their tenant copy', () => {
    expect(treeFingerprint(home, notInstalls)).toBe(homeBefore);
  });
});
