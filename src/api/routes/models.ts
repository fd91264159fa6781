import Router from '@koa/router';
import { VIDEO_MODELS } from '../../catalog/models';
import { channelsFor, type TextChannel, type VideoChannel } from '../../config/channels';
import type { KeyStore } from '../../store/keys';
import type { GatewayState } from '../context';
import { NotFoundError } from '../errors';
import type { RateLimiter } from '../../limits/rate-limiter';
import { anyKeyAuth } from '../middleware/auth';
import type { ConsoleAuth } from '../console/cookie-auth';

export interface ModelEntry {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  /** Anthropic's model-list fields too, so both official SDKs can list models here. */
  type: 'model';
  display_name: string;
  created_at: string;
  /** Where the model is called. */
  endpoints: string[];
}

/** Where the models of each text channel type are called. */
const TEXT_ENDPOINTS: Record<TextChannel['type'], string> = {
  'anthropic-native': '/v1/messages',
  'openai-compatible': '/v1/chat/completions',
  'openai-responses': '/v1/responses',
};

/** Every model some channel serves: the native text models, the other text models, the video models. */
export function modelCatalog(video: readonly VideoChannel[], text: readonly TextChannel[], since: number): ModelEntry[] {
  const entry = (id: string, ownedBy: string, endpoints: string[]): ModelEntry => ({
    id,
    object: 'model',
    created: since,
    owned_by: ownedBy,
    type: 'model',
    display_name: id,
    created_at: new Date(since * 1000).toISOString(),
    endpoints,
  });
  const out = new Map<string, ModelEntry>();
  for (const c of text) {
    const endpoint = TEXT_ENDPOINTS[c.type];
    for (const id of Object.keys(c.models)) {
      const known = out.get(id);
      // A model served on both OpenAI APIs lists both endpoints.
      if (known && !known.endpoints.includes(endpoint)) known.endpoints.push(endpoint);
      if (!known) out.set(id, entry(id, c.type === 'anthropic-native' ? 'cm' : 'openai-compatible', [endpoint]));
    }
  }
  for (const m of VIDEO_MODELS) {
    if (channelsFor(video, m.id).length === 0) continue;
    const endpoints =
      m.family === 'motion'
        ? ['/v1/video/create', '/v1/videos', '/v1/chat/completions']
        : m.endpoints.map((e) => (e === 'videos' ? '/v1/videos' : '/v1/video/create'));
    out.set(m.id, entry(m.id, m.family, endpoints));
  }
  return [...out.values()];
}

/**
 * GET /v1/models and /v1/models/{id}: the OpenAI list shape, with Anthropic's list fields
 * alongside (has_more, first_id, last_id, type, display_name, created_at). Keys carry no
 * model restrictions, so every key may call every model listed.
 */
export function modelRoutes(deps: {
  keys: KeyStore;
  limiter: RateLimiter;
  channels: readonly VideoChannel[];
  textChannels: readonly TextChannel[];
  /** Console session cookies, accepted when no key header is sent. */
  consoleAuth?: ConsoleAuth;
}): Router<GatewayState> {
  const router = new Router<GatewayState>();
  const catalog = modelCatalog(deps.channels, deps.textChannels, Math.floor(Date.now() / 1000));
  const auth = anyKeyAuth(deps.keys, deps.limiter, deps.consoleAuth);

  router.get('/v1/models', auth, (ctx) => {
    ctx.body = { object: 'list', data: catalog, has_more: false, first_id: catalog[0]?.id ?? null, last_id: catalog.at(-1)?.id ?? null };
  });
  router.get('/v1/models/:id', auth, (ctx) => {
    const found = catalog.find((m) => m.id === ctx.params.id);
    if (!found) throw new NotFoundError(`The model '${ctx.params.id}' does not exist or is not served by this gateway.`, 'model');
    ctx.body = found;
  });
  return router;
}
