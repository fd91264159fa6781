import { z } from 'zod';
import { signedUrl } from './common';

/** POST /motion/v1/characters and its permalink (spec 2.3). */
export const character = z.object({
  id: z.string().meta({ description: '`char_<username>`.' }),
  username: z.string().meta({ description: 'Cast it in a motion prompt as @username.' }),
  permalink: z.string().meta({ description: 'GET /motion/v1/characters/{id} on this gateway.' }),
  profile_picture_url: signedUrl,
});
