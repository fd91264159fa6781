import type { VideoChannel } from '../../config/channels';
import type { UpstreamTimeouts } from '../provider';
import { getUpstreamJson, readJson, upstreamFetch, UpstreamError } from '../http';
import type { DownloadRef, PollResult, SubmitInput, VideoUpstream } from '../video-upstream';
import { fromVeoOperation, toVeoRequest, veoOperation, veoSubmitResponse } from './mapping';

export function geminiVeoClient(channel: VideoChannel, timeouts: UpstreamTimeouts): VideoUpstream {
  const timeoutMs = timeouts.requestMs;
  const headers = { 'x-goog-api-key': channel.apiKey };
  return {
    async submit(input: SubmitInput) {
      const url = `${channel.baseUrl}/v1beta/models/${encodeURIComponent(input.upstreamModel)}:predictLongRunning`;
      // The Gemini API documents no idempotency key; it is sent all the same, for proxies and
      // the simulator that honour one (a retried submit then gets its first job back).
      const idempotency = { 'idempotency-key': `${input.taskId}:submit` };
      const res = await upstreamFetch(
        'veo submit',
        url,
        { method: 'POST', headers: { ...headers, ...idempotency, 'content-type': 'application/json' }, body: JSON.stringify(toVeoRequest(input)) },
        timeoutMs,
        channel.name,
      );
      return (await readJson('veo submit', res, veoSubmitResponse)).name;
    },

    async poll(operationName: string): Promise<PollResult> {
      return fromVeoOperation(
        await getUpstreamJson('veo poll', `${channel.baseUrl}/v1beta/${operationName}`, headers, timeouts.pollMs, channel.name, veoOperation),
      );
    },

    /**
     * The file URI needs the key (peers fail here), and it redirects to storage: the key goes
     * only to the provider's own origin, never to wherever the redirect points.
     */
    async download(ref: DownloadRef) {
      const own = new URL(channel.baseUrl).origin;
      let url = new URL(ref.url);
      for (let hop = 0; hop < 5; hop++) {
        const res = await upstreamFetch('veo download', url.href, { headers: url.origin === own ? headers : {}, redirect: 'manual' }, timeoutMs, channel.name);
        const location = res.headers.get('location');
        if (res.status >= 300 && res.status < 400 && location) {
          url = new URL(location, url);
          continue;
        }
        return res;
      }
      throw new UpstreamError('veo download: too many redirects', 'retryable');
    },
  };
}
