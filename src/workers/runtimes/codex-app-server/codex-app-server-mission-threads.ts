/**
 * mission_id → thread id, so a later operation of the same mission continues the mission's Codex
 * thread (`thread/resume`). Kept beside the threads themselves, in `$CODEX_HOME/uh-mission-threads.json`
 * (the server's `codexHome` from `initialize`): a thread only exists in the CODEX_HOME that ran it.
 * Written atomically (temp file + rename); a missing or corrupt file reads as empty.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

export const MISSION_THREADS_FILE = 'uh-mission-threads.json';

const MapSchema = z.record(
  z.string(),
  z.looseObject({ thread_id: z.string(), operation_id: z.string(), at: z.string() }),
);

function read(path: string): z.infer<typeof MapSchema> {
  try {
    const parsed = MapSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    return parsed.success ? parsed.data : {};
  } catch {
    return {};
  }
}

export function missionThreadOf(codexHome: string, missionId: string): string | null {
  return read(join(codexHome, MISSION_THREADS_FILE))[missionId]?.thread_id ?? null;
}

export function rememberMissionThread(
  codexHome: string,
  missionId: string,
  threadId: string,
  operationId: string,
  at: Date,
): void {
  const path = join(codexHome, MISSION_THREADS_FILE);
  const map = read(path);
  map[missionId] = { thread_id: threadId, operation_id: operationId, at: at.toISOString() };
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(map, null, 2)}\n`);
  renameSync(tmp, path);
}
