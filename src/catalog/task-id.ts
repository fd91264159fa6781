/**
 * Public task ids. The id is also the Temporal workflow id, so operators find a
 * client's task in the Web UI by the id the client holds.
 *
 * `<model>:<digits>-<suffix>`: digits are the creation time in ms (sortable, readable),
 * the suffix is random so ids cannot be guessed from the time.
 */
import { randomBytes, randomUUID } from 'node:crypto';

const SUFFIX_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

function randomSuffix(length = 10): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const b of bytes) out += SUFFIX_ALPHABET[b % SUFFIX_ALPHABET.length];
  return out;
}

export function newTaskId(model: string, now = Date.now()): string {
  return `${model}:${now}-${randomSuffix()}`;
}

export function newRemixTaskId(model: string, now = Date.now()): string {
  return `${model}:remix-${now}-${randomSuffix()}`;
}

/** `video_<uuid>` ids of the vidgen_3_1 family on /v1/videos (spec 2.2). */
export function newVideoObjectId(): string {
  return `video_${randomUUID()}`;
}

/** A character's handle (`@username`); its id is `char_<username>`. */
export function newCharacterUsername(): string {
  return randomSuffix(10);
}

/** Cheap shape check before asking Temporal; anything else is a 404 without a round trip. */
const TASK_ID = /^(?:[a-z0-9._-]{1,64}:(?:remix-)?\d{10,16}-[a-z0-9]{6,32}|video_[0-9a-f-]{36})$/;

export function isTaskIdShape(id: string): boolean {
  return TASK_ID.test(id);
}
