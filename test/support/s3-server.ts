/**
 * A local S3-compatible server (s3rver, files in a temp dir) for the artifact store's tests, with
 * one bucket, and the `UH_ARTIFACT_STORE_S3_FILE` a fleet would mount to reach it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import S3rver from 's3rver';
import { removeDir, tempDir } from './temp.js';

export interface TestS3 {
  endpoint: string;
  bucket: string;
  /** The JSON settings file (endpoint, region, credentials). */
  settingsFile: string;
  /** The server's own files (where the objects are). */
  directory: string;
  stop: () => Promise<void>;
}

export async function startTestS3(bucket = 'uh-artifacts'): Promise<TestS3> {
  const directory = tempDir('uh-s3rver-');
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: bucket }],
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const settingsFile = join(tempDir('uh-s3-settings-'), 's3.json');
  writeFileSync(
    settingsFile,
    JSON.stringify({
      endpoint,
      region: 'us-east-1',
      access_key_id: 'S3RVER',
      secret_access_key: 'S3RVER',
      force_path_style: true,
    }),
    { mode: 0o600 },
  );
  return {
    endpoint,
    bucket,
    settingsFile,
    directory,
    stop: async () => {
      await server.close();
      removeDir(directory);
    },
  };
}
