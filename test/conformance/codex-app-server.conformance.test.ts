/**
 * Conformance of `codex-app-server` with the REAL app server (scripts/install-real-runtimes.sh)
 * against the scripted Responses server: a step list that edits a file and completes; a `hang`
 * step for the runs the suite cancels or times out.
 */
import { realRuntimeBinary } from '../support/real-runtimes.js';
import { makeCodexHome } from '../support/codex-home.js';
import { startResponsesServer, type ResponsesServer } from '../support/responses-server.js';
import { removeDir } from '../support/temp.js';
import { codexAppServerAdapter } from '../../src/workers/runtimes/codex-app-server/codex-app-server-adapter.js';
import { describeConformance } from './runtime-conformance.js';

const SECRET = 'sk-conformance-appserver-51f0c2';
// Two servers, each scripted once: one whose turns edit a file and complete (its last step repeats
// for later requests), one that never answers (for the runs the suite cancels or times out).
let completing: ResponsesServer;
let hanging: ResponsesServer;
let completingHome: string;
let hangingHome: string;

const config = (codexHome: string, extra: Record<string, unknown> = {}) => ({
  binary: realRuntimeBinary('codex'),
  codex_home: codexHome,
  env: { UH_MOCK_API_KEY: SECRET },
  mission_thread: 'new',
  ...extra,
});

describeConformance('codex-app-server', {
  adapter: codexAppServerAdapter,
  successConfig: () => config(completingHome),
  hangingConfig: () => config(hangingHome, { interrupt_grace_ms: 2000 }),
  secrets: [SECRET],
  setup: async () => {
    completing = await startResponsesServer({ apiKey: SECRET });
    hanging = await startResponsesServer({ apiKey: SECRET });
    await completing.script([
      {
        kind: 'function_call',
        name: 'exec_command',
        arguments: { cmd: "printf 'ok\\n' > conformance.txt" },
        call_id: 'call_c1',
      },
      { kind: 'message', text: 'done' },
    ]);
    await hanging.script([{ kind: 'hang' }]);
    completingHome = makeCodexHome(completing.url);
    hangingHome = makeCodexHome(hanging.url);
  },
  teardown: async () => {
    await completing?.close();
    await hanging?.close();
    removeDir(completingHome);
    removeDir(hangingHome);
  },
});
