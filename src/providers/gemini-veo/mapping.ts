import { z } from 'zod';
import type { LoadedImage, PollResult, SubmitInput } from '../video-upstream';

/** Veo through the Gemini API (upstreams.md section 2): pure request/response mapping. */

interface VeoImage {
  bytesBase64Encoded: string;
  mimeType: string;
}

export interface VeoRequest {
  instances: [
    {
      prompt: string;
      image?: VeoImage;
      lastFrame?: VeoImage;
      referenceImages?: { image: VeoImage; referenceType: 'asset' }[];
    },
  ];
  parameters: { aspectRatio?: '16:9' | '9:16'; durationSeconds?: number; resolution?: '1080p' };
}

const veoImage = (img: LoadedImage): VeoImage => ({ bytesBase64Encoded: img.bytes.toString('base64'), mimeType: img.mimeType });

export function toVeoRequest(input: SubmitInput): VeoRequest {
  const [first, second] = input.images;
  const instance: VeoRequest['instances'][0] = { prompt: input.prompt };
  if (input.imageRole === 'components') {
    if (input.images.length > 0) instance.referenceImages = input.images.map((img) => ({ image: veoImage(img), referenceType: 'asset' }));
  } else {
    if (first) instance.image = veoImage(first);
    if (second && input.imageRole === 'first-last-frame') instance.lastFrame = veoImage(second);
  }
  const parameters: VeoRequest['parameters'] = {};
  if (input.aspectRatio) parameters.aspectRatio = input.aspectRatio;
  if (input.seconds) parameters.durationSeconds = input.seconds;
  // Veo 2 has no resolution parameter; upsampling means 1080p on the models that have it.
  if (input.enableUpsample && !input.upstreamModel.startsWith('veo-2')) parameters.resolution = '1080p';
  return { instances: [instance], parameters };
}

export const veoSubmitResponse = z.object({ name: z.string().min(1) });

export const veoOperation = z.object({
  name: z.string(),
  done: z.boolean().optional(),
  error: z.object({ code: z.number().optional(), message: z.string().optional() }).optional(),
  response: z
    .object({
      generateVideoResponse: z
        .object({
          generatedSamples: z.array(z.object({ video: z.object({ uri: z.string().min(1) }) })).optional(),
          raiMediaFilteredCount: z.number().optional(),
          raiMediaFilteredReasons: z.array(z.string()).optional(),
        })
        .optional(),
    })
    .optional(),
});

export function fromVeoOperation(op: z.output<typeof veoOperation>): PollResult {
  if (!op.done) return { phase: 'running', progress: null };
  if (op.error) {
    return { phase: 'failed', error: { code: 'upstream_failed', message: op.error.message ?? `Veo operation failed (code ${op.error.code ?? 'unknown'})` } };
  }
  const result = op.response?.generateVideoResponse;
  const uri = result?.generatedSamples?.[0]?.video.uri;
  if (uri) return { phase: 'succeeded', download: { url: uri } };
  if (result?.raiMediaFilteredCount) {
    const reasons = result.raiMediaFilteredReasons?.join('; ') || 'filtered by the provider safety system';
    return { phase: 'failed', error: { code: 'content_filtered', message: reasons } };
  }
  return { phase: 'failed', error: { code: 'upstream_failed', message: 'Veo operation finished without a video' } };
}
