/** `UH_ARTIFACT_STORE` and its S3 file, parsed once in the config: bad input names the variable or field, never a secret. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/shared/config.js';
import { UhError } from '../../src/shared/errors.js';
import { removeDir, tempDir } from '../support/temp.js';

const dir = tempDir('uh-art-config-');
afterAll(() => removeDir(dir));

function failure(env: Record<string, string>): UhError {
  try {
    loadConfig(env);
  } catch (error) {
    if (UhError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('loadConfig accepted it');
}

describe('UH_ARTIFACT_STORE', () => {
  it('defaults to a directory in the cache dir, and takes dir: and s3:// stores', () => {
    expect(loadConfig({ UH_CACHE_DIR: '/var/cache/uh' }).queue.artifactStore).toEqual({
      kind: 'dir',
      root: '/var/cache/uh/artifacts',
    });
    expect(loadConfig({ UH_ARTIFACT_STORE: 'dir:/mnt/uh' }).queue.artifactStore).toEqual({
      kind: 'dir',
      root: '/mnt/uh',
    });
    const file = join(dir, 's3.json');
    writeFileSync(
      file,
      JSON.stringify({ endpoint: 'http://127.0.0.1:9000', access_key_id: 'AK', secret_access_key: 'SK' }),
    );
    expect(
      loadConfig({ UH_ARTIFACT_STORE: 's3://uh-art/fleet/a', UH_ARTIFACT_STORE_S3_FILE: file }).queue.artifactStore,
    ).toMatchObject({
      kind: 's3',
      bucket: 'uh-art',
      prefix: 'fleet/a',
      endpoint: 'http://127.0.0.1:9000',
      credentials: { accessKeyId: 'AK', secretAccessKey: 'SK' },
    });
  });

  it('refuses a store that is neither, naming the variable', () => {
    const error = failure({ UH_ARTIFACT_STORE: 'ftp://x' });
    expect(error.kind).toBe('invalid_input');
    expect([error.message, ...error.details].join('\n')).toContain('UH_ARTIFACT_STORE');
  });

  it('refuses a bad S3 file naming the field, never printing the secret', () => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ secret_access_key: 'very-secret-value', regoin: 'x' }));
    const error = failure({ UH_ARTIFACT_STORE: 's3://uh-art', UH_ARTIFACT_STORE_S3_FILE: file });
    const text = [error.message, ...error.details, error.hint ?? ''].join('\n');
    expect(error.kind).toBe('invalid_input');
    expect(text).toContain('UH_ARTIFACT_STORE_S3_FILE');
    expect(text).toMatch(/regoin|access_key_id/);
    expect(text).not.toContain('very-secret-value');
  });
});
