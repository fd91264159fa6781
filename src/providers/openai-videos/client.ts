import type { VideoChannel } from '../../config/channels';
import type { UpstreamTimeouts } from '../provider';
import { getUpstreamJson, readJson, upstreamFetch, UpstreamError } from '../http';
import type { DownloadRef, JobPage, PollResult, SubmitInput, VideoUpstream } from '../video-upstream';
import { fromOpenAiVideo, fromOpenAiVideoPage, openAiCharacter, openAiVideo, openAiVideoDeleted, openAiVideoPage, toVideoForm } from './mapping';

/** The most `GET /v1/videos` returns in one page. */
const LIST_PAGE_JOBS = 100;

export function openAiVideosClient(channel: VideoChannel, timeouts: UpstreamTimeouts): VideoUpstream {
  const timeoutMs = timeouts.requestMs;
  const auth = { authorization: `Bearer ${channel.apiKey}` };
  const contentUrl = (id: string) => `${channel.baseUrl}/v1/videos/${encodeURIComponent(id)}/content`;
  return {
    async submit(input: SubmitInput) {
      // The idempotency key makes a retried create after a lost response return the same
      // job instead of starting (and billing) a second one.
      const res = await upstreamFetch(
        'videos create',
        `${channel.baseUrl}/v1/videos`,
        { method: 'POST', headers: { ...auth, 'idempotency-key': `${input.taskId}:submit` }, body: toVideoForm(input, channel.sendExtensions) },
        timeoutMs,
        channel.name,
      );
      return (await readJson('videos create', res, openAiVideo)).id;
    },

    async poll(jobId: string): Promise<PollResult> {
      const url = `${channel.baseUrl}/v1/videos/${encodeURIComponent(jobId)}`;
      return fromOpenAiVideo(await getUpstreamJson('videos retrieve', url, auth, timeouts.pollMs, channel.name, openAiVideo), contentUrl(jobId));
    },

    async listJobs(after: string | undefined): Promise<JobPage> {
      const query = new URLSearchParams({ limit: String(LIST_PAGE_JOBS), order: 'desc' });
      if (after !== undefined) query.set('after', after);
      const page = await getUpstreamJson('videos list', `${channel.baseUrl}/v1/videos?${query}`, auth, timeouts.pollMs, channel.name, openAiVideoPage);
      return fromOpenAiVideoPage(page, contentUrl);
    },

    async download(ref: DownloadRef) {
      return upstreamFetch('videos content', ref.url, { headers: auth }, timeoutMs, channel.name);
    },

    async cancel(jobId: string) {
      // OpenAI deletes only a finished video (a running one is a 400, which the caller takes as a
      // refusal); providers compatible with it may cancel a running job through the same call.
      const res = await upstreamFetch(
        'videos delete',
        `${channel.baseUrl}/v1/videos/${encodeURIComponent(jobId)}`,
        { method: 'DELETE', headers: auth },
        timeoutMs,
        channel.name,
      );
      return (await readJson('videos delete', res, openAiVideoDeleted)).deleted;
    },

    async remix(input) {
      const body: Record<string, string> = { prompt: input.prompt };
      if (input.size && channel.sendExtensions) body.size = input.size;
      const res = await upstreamFetch(
        'videos remix',
        `${channel.baseUrl}/v1/videos/${encodeURIComponent(input.sourceJobId)}/remix`,
        { method: 'POST', headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': `${input.taskId}:submit` }, body: JSON.stringify(body) },
        timeoutMs,
        channel.name,
      );
      return (await readJson('videos remix', res, openAiVideo)).id;
    },

    async profilePicture(characterId: string) {
      // Not part of OpenAI's API; some compatible providers (and the simulator) serve one.
      try {
        const res = await upstreamFetch(
          'character picture',
          `${channel.baseUrl}/v1/videos/characters/${encodeURIComponent(characterId)}/profile_picture`,
          { headers: auth },
          timeoutMs,
          channel.name,
        );
        return Buffer.from(await res.arrayBuffer());
      } catch (err) {
        if (err instanceof UpstreamError && err.kind === 'rejected') return null;
        throw err;
      }
    },

    async createCharacter(name: string, clip: Buffer, options: { timestamps?: string; selfPortrait?: boolean }) {
      const form = new FormData();
      form.set('name', name);
      form.set('video', new Blob([new Uint8Array(clip)], { type: 'video/mp4' }), 'character.mp4');
      if (options.timestamps && channel.sendExtensions) form.set('timestamps', options.timestamps);
      if (options.selfPortrait && channel.sendExtensions) form.set('self_portrait', 'true');
      const res = await upstreamFetch(
        'characters create',
        `${channel.baseUrl}/v1/videos/characters`,
        { method: 'POST', headers: auth, body: form },
        timeoutMs,
        channel.name,
      );
      const body = await readJson('characters create', res, openAiCharacter);
      return { id: body.id, name: body.name ?? name };
    },
  };
}
