import { z } from 'zod';
import type { JobPage, PollResult, SubmitInput } from '../video-upstream';

/** OpenAI-style Videos API (upstreams.md section 1): pure request/response mapping. */

export function toVideoForm(input: SubmitInput, sendExtensions: boolean): FormData {
  const form = new FormData();
  form.set('model', input.upstreamModel);
  form.set('prompt', input.prompt);
  if (input.seconds !== undefined) form.set('seconds', String(input.seconds));
  if (input.size) form.set('size', input.size);
  const image = input.images[0];
  if (image) {
    const ext = image.mimeType.split('/')[1] ?? 'png';
    form.set('input_reference', new Blob([new Uint8Array(image.bytes)], { type: image.mimeType }), `reference.${ext}`);
  }
  if (sendExtensions) {
    form.set('watermark', String(input.watermark));
    form.set('private', String(input.private));
    for (const id of input.characterIds) form.append('characters[]', id);
    if (input.style) form.set('style', input.style);
    if (input.metadata) form.set('metadata', JSON.stringify(input.metadata));
  }
  return form;
}

export const openAiVideo = z.object({
  id: z.string().min(1),
  status: z.enum(['queued', 'in_progress', 'completed', 'failed']),
  progress: z.number().nullish(),
  error: z.object({ code: z.string().nullish(), message: z.string().nullish() }).nullish(),
});

export function fromOpenAiVideo(video: z.output<typeof openAiVideo>, contentUrl: string): PollResult {
  switch (video.status) {
    case 'queued':
      return { phase: 'queued', progress: video.progress ?? null };
    case 'in_progress':
      return { phase: 'running', progress: video.progress ?? null };
    case 'completed':
      return { phase: 'succeeded', download: { url: contentUrl } };
    case 'failed':
      return {
        phase: 'failed',
        error: {
          code: video.error?.code === 'content_policy_violation' ? 'content_filtered' : 'upstream_failed',
          message: video.error?.message ?? 'the provider reported the job failed',
        },
      };
  }
}

/**
 * GET /v1/videos's answer. Its entries are checked one by one (fromOpenAiVideoPage): one the
 * gateway cannot read leaves that job to its own poll rather than failing the page.
 */
export const openAiVideoPage = z.object({
  data: z.array(z.unknown()),
  has_more: z.boolean().nullish(),
  last_id: z.string().nullish(),
});

export function fromOpenAiVideoPage(page: z.output<typeof openAiVideoPage>, contentUrl: (id: string) => string): JobPage {
  const jobs: JobPage['jobs'] = [];
  for (const entry of page.data) {
    const video = openAiVideo.safeParse(entry);
    if (video.success) jobs.push({ id: video.data.id, result: fromOpenAiVideo(video.data, contentUrl(video.data.id)) });
  }
  const lastId = page.last_id ?? jobs[jobs.length - 1]?.id ?? null;
  return { jobs, next: page.has_more && lastId ? lastId : null };
}

export const openAiCharacter = z.object({ id: z.string().min(1), name: z.string().nullish() });

/** DELETE /v1/videos/{id}'s answer. */
export const openAiVideoDeleted = z.object({ id: z.string(), deleted: z.boolean() });
