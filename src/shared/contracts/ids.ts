import { z } from 'zod';

/** Mission, operation and runtime ids: safe in file names, Redis keys and BullMQ job ids. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export const IdSchema = z
  .string()
  .regex(ID_PATTERN, 'must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$ (letters, digits, . _ -; 1 to 128 chars)');
