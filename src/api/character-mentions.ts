import type { CharacterService } from '../tasks/character-service';
import type { CastCharacters } from '../tasks/task';
import { InvalidRequestError } from './errors';

/** `@username` not inside a word or an address (so a@b.com is no mention). */
const MENTION = /(^|[^\w.@])@([a-z0-9_][a-z0-9_.]{1,63})/gi;

/**
 * Distinct characters one prompt may cast. Each is a lookup in the task service before the
 * task is charged; a prompt with thousands of them once held the API busy (503s for seconds).
 */
export const MAX_MENTIONS = 10;
/** Lookups of one prompt's characters under way at once. */
export const MENTION_LOOKUP_CONCURRENCY = 4;

/**
 * The distinct usernames a prompt mentions, in order of first mention (lower case, trailing
 * dots dropped). More than MAX_MENTIONS distinct ones is a 400 naming the limit; the scan stops
 * there, so a prompt of any length costs one pass.
 */
export function mentionedUsernames(prompt: string, param = 'prompt'): string[] {
  const usernames = new Set<string>();
  for (const match of prompt.matchAll(MENTION)) {
    usernames.add(match[2].replace(/\.+$/, '').toLowerCase());
    if (usernames.size > MAX_MENTIONS) {
      throw new InvalidRequestError(
        `A prompt may mention at most ${MAX_MENTIONS} distinct characters (@username); this one mentions more.`,
        param,
        'too_many_mentions',
      );
    }
  }
  return [...usernames];
}

/** Two casts on one task must live on one channel. */
export function mergeCast(a: CastCharacters | undefined, b: CastCharacters | undefined): CastCharacters | undefined {
  if (!a || !b) return a ?? b;
  if (a.channel !== b.channel)
    throw new InvalidRequestError('These characters were made on different providers and cannot be cast together.', 'prompt', 'incompatible_characters');
  return { channel: a.channel, characterIds: [...a.characterIds, ...b.characterIds] };
}

type Character = NonNullable<Awaited<ReturnType<CharacterService['get']>>>;

/**
 * Looks the usernames up, at most `concurrency` at a time, in order; no new lookup starts
 * once one came back unknown (or failed). Returns the characters in mention order, or the
 * first unknown username in mention order.
 */
export async function lookUpMentions(
  usernames: readonly string[],
  get: (username: string) => Promise<Character | null>,
  concurrency = MENTION_LOOKUP_CONCURRENCY,
): Promise<{ found: Character[] } | { unknown: string }> {
  const results: (Character | null | undefined)[] = new Array(usernames.length);
  let next = 0;
  let stop = false;
  const lane = async () => {
    while (!stop && next < usernames.length) {
      const index = next++;
      try {
        const character = await get(usernames[index]);
        results[index] = character;
        if (!character) stop = true;
      } catch (err) {
        stop = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, usernames.length) }, lane));
  // Lookups start in mention order and all that started have finished: without an unknown
  // among them, every username was looked up.
  const unknownAt = results.indexOf(null);
  if (unknownAt >= 0) return { unknown: usernames[unknownAt] };
  return { found: results as Character[] };
}

/**
 * The characters a motion prompt casts: every `@username` must be a finished character of
 * the same key (anything else is a 400), and they must live on one provider channel.
 */
export async function castFromPrompt(prompt: string, ownerId: string, characters: CharacterService): Promise<CastCharacters | undefined> {
  const usernames = mentionedUsernames(prompt);
  if (usernames.length === 0) return undefined;
  const result = await lookUpMentions(usernames, (u) => characters.get(`char_${u}`, ownerId));
  if ('unknown' in result) {
    throw new InvalidRequestError(`Unknown character @${result.unknown}: create it with POST /motion/v1/characters first.`, 'prompt', 'unknown_character');
  }
  const channels = new Set(result.found.map((c) => c.channel));
  if (channels.size > 1)
    throw new InvalidRequestError(
      'The characters in this prompt were made on different providers and cannot be cast together.',
      'prompt',
      'incompatible_characters',
    );
  return { channel: [...channels][0], characterIds: result.found.map((c) => c.upstreamId) };
}
