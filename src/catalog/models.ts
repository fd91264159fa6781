/**
 * The video model table of spec section 4.9 and the per-model limits of section 8.
 * Pure data, safe to import from workflow code.
 */

export type VideoFamily = 'vidgen' | 'motion';
/** Which endpoint families may create tasks for a model. */
export type VideoEndpoint = 'video-create' | 'videos';

export interface VideoModel {
  id: string;
  family: VideoFamily;
  endpoints: readonly VideoEndpoint[];
  /** aspect_ratio is accepted everywhere on /v1/video/create but honored only here (spec 4.1). */
  honorsAspectRatio: boolean;
  /** Maximum reference images on /v1/video/create (spec section 8; others documented in docs/api.md). */
  maxImages: number;
  /** How reference images are used upstream. */
  imageRole: 'first-frame' | 'first-last-frame' | 'components';
  /** Allowed `duration` values on /v1/video/create (motion only); first is the default. */
  durations?: readonly number[];
  /** Allowed `seconds` values on /v1/videos. */
  seconds?: readonly number[];
  /** Allowed `size` values on /v1/videos. */
  sizes?: readonly string[];
}

const vidgen = (id: string, opts: Partial<Pick<VideoModel, 'honorsAspectRatio' | 'maxImages' | 'imageRole'>> = {}): VideoModel => ({
  id,
  family: 'vidgen',
  endpoints: ['video-create'],
  honorsAspectRatio: opts.honorsAspectRatio ?? false,
  maxImages: opts.maxImages ?? 1,
  imageRole: opts.imageRole ?? 'first-frame',
});

const MOTION_SECONDS = [4, 8, 10, 12, 15, 25] as const;
export const MOTION_SIZES = ['720x1280', '1280x720', '480x480', '1080x1080'] as const;

const motion = (id: string, durations: readonly number[]): VideoModel => ({
  id,
  family: 'motion',
  endpoints: ['video-create', 'videos'],
  honorsAspectRatio: false,
  maxImages: 1,
  imageRole: 'first-frame',
  durations,
  seconds: MOTION_SECONDS,
  sizes: MOTION_SIZES,
});

const vidgenVideos = (id: string): VideoModel => ({
  ...vidgen(id, { honorsAspectRatio: true }),
  endpoints: ['videos'],
  seconds: [4, 6, 8],
  sizes: ['16x9', '720x1280'],
});

export const VIDEO_MODELS: readonly VideoModel[] = [
  vidgen('vidgen2'),
  vidgen('vidgen2-fast'),
  vidgen('vidgen2-pro'),
  vidgen('vidgen2-fast-frames', { maxImages: 2, imageRole: 'first-last-frame' }),
  vidgen('vidgen2-fast-components', { maxImages: 3, imageRole: 'components' }),
  vidgen('vidgen3', { honorsAspectRatio: true }),
  vidgen('vidgen3-fast', { honorsAspectRatio: true }),
  vidgen('vidgen3-pro', { honorsAspectRatio: true }),
  vidgen('vidgen3-pro-frames', { honorsAspectRatio: true, maxImages: 1 }),
  vidgen('vidgen3.1', { honorsAspectRatio: true }),
  vidgen('vidgen3.1-fast', { honorsAspectRatio: true }),
  vidgenVideos('vidgen_3_1'),
  vidgenVideos('vidgen_3_1-fast'),
  motion('motion-2', [10]),
  motion('motion-2-pro', [10, 15, 25]),
];

const byId = new Map(VIDEO_MODELS.map((m) => [m.id, m]));

export function findVideoModel(id: string): VideoModel | undefined {
  return byId.get(id);
}

export function videoModelIds(endpoint?: VideoEndpoint): string[] {
  return VIDEO_MODELS.filter((m) => !endpoint || m.endpoints.includes(endpoint)).map((m) => m.id);
}
