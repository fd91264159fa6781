import { z } from 'zod';

/** Spec section 8: a character source clip spans 1 to 3 seconds. */
export const CHARACTER_MIN_SECONDS = 1;
export const CHARACTER_MAX_SECONDS = 3;

/** `<start>,<end>` in seconds (decimals allowed), end - start within 1-3 s. */
export const characterTimestamps = z
  .string()
  .regex(/^\s*\d+(\.\d+)?\s*,\s*\d+(\.\d+)?\s*$/, "expected '<start>,<end>' in seconds, for example '0,2.5'")
  .refine((value) => {
    const [start = 0, end = 0] = value.split(',').map(Number);
    const span = end - start;
    return span >= CHARACTER_MIN_SECONDS && span <= CHARACTER_MAX_SECONDS;
  }, `the span between start and end must be ${CHARACTER_MIN_SECONDS} to ${CHARACTER_MAX_SECONDS} seconds`)
  .transform((value) => value.replace(/\s+/g, ''));
