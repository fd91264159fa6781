/**
 * The gateway's default avatar: the profile picture stored for a character whose provider has
 * no picture of its own. A 64x64 flat PNG, embedded so it needs no file on disk.
 *
 * The provider simulator (simulator/assets.ts) serves these same bytes as its characters'
 * profile picture; it imports them from here (tools depend on the product, never the reverse).
 */
const DEFAULT_AVATAR_PNG_B64 =
  'iVBORw0KGgoAAAANSUhEUgAAAEAAAABACAIAAAAlC+aJAAAACXBIWXMAAAABAAAAAQBPJcTWAAAAb0lEQVR4nO3TUQ3AIABDQSzN' +
  'EzJnABNIIXhYIB3hkgp499Hy1Hb0SrwAIF0AkC4ASBcApAsA0gVJwOjvkgEAAAAAAAAAAAAAAAAAAAAAnAX4wwDSuwOw6qw7zg0A' +
  'AAAAAAAAAAAAAAAAAAAA8AkwASDMPbQZAz8iAAAAAElFTkSuQmCC';

export const DEFAULT_AVATAR_PNG: Buffer = Buffer.from(DEFAULT_AVATAR_PNG_B64, 'base64');
