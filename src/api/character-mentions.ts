import type { CharacterService } from '../tasks/character-service';
import type { CastCharacters } from '../tasks/task';
import { InvalidRequestError } from './errors';

/** `@username` not inside a word or an address (so a@b.com is no mention). */
const MENTION = /(^|[^\w.@])@([a-z0-9_][a-z0-9_.]{1,63})/gi;

/** Two casts on one task must live on one channel. */
export function mergeCast(a: CastCharacters | undefined, b: CastCharacters | undefined): CastCharacters | undefined {
  if (!a || !b) return a ?? b;
  if (a.channel !== b.channel) throw new InvalidRequestError('These characters were made on different providers and cannot be cast together.', 'prompt', 'incompatible_characters');
  return { channel: a.channel, characterIds: [...a.characterIds, ...b.characterIds] };
}

/**
 * The characters a motion prompt casts: every `@username` must be a finished character of
 * the same key (anything else is a 400), and they must live on one provider channel.
 */
export async function castFromPrompt(prompt: string, ownerId: string, characters: CharacterService): Promise<CastCharacters | undefined> {
  const usernames = [...new Set([...prompt.matchAll(MENTION)].map((m) => m[2]!.replace(/\.+$/, '').toLowerCase()))];
  if (usernames.length === 0) return undefined;
  const found = await Promise.all(usernames.map(async (u) => ({ username: u, character: await characters.get(`char_${u}`, ownerId) })));
  const unknown = found.find((f) => !f.character);
  if (unknown) throw new InvalidRequestError(`Unknown character @${unknown.username}: create it with POST /motion/v1/characters first.`, 'prompt', 'unknown_character');
  const channels = new Set(found.map((f) => f.character!.channel));
  if (channels.size > 1) throw new InvalidRequestError('The characters in this prompt were made on different providers and cannot be cast together.', 'prompt', 'incompatible_characters');
  return { channel: [...channels][0]!, characterIds: found.map((f) => f.character!.upstreamId) };
}
