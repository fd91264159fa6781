/**
 * The side effects of a video task. Built by a factory with its dependencies (Temporal's
 * samples' pattern), so the worker wires real ones and nothing here reads globals.
 * Errors leave as ApplicationFailures whose type tells the workflow's retry policy what to do.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { findVideoModel } from '../catalog/models';
import { channelsFor, failoverOrder, type VideoChannel } from '../config/channels';
import { readHead } from '../files/read-head';
import { FetchRejectedError } from '../net/url-guard';
import { FetchSlotsBusyError, type FetchFile, type UserUrlFetcher } from '../net/user-url-fetcher';
import { isMp4, sniffImage } from '../net/media';
import { storageKeys, type BlobStore } from '../files/blob-store';
import type { EdgeOutcome } from '../billing/charge-lifecycle';
import type { CharacterSource, ImageRef, TaskRequest } from '../tasks/task';
import { UpstreamError } from '../providers/http';
import { submitOutcome } from '../providers/submit-outcome';
import type { DownloadRef, LoadedImage, PollResult, VideoUpstream } from '../providers/video-upstream';
import { videoClientFor } from '../providers/registry';
import {
  FAILURE_TYPES,
  SUBMIT_FAILURE_TYPES,
  type ChannelPlan,
  type PlannedChannels,
  type StoredVideoResult,
  type WatchJobInput,
  type WatchJobResult,
} from '../workflows/video-task-types';
import { watchJob, type JobWatchSteps } from './watch-job';
import { ChannelPoller } from './channel-poller';
import { metrics } from '../metrics/metrics';
import type { Logger } from '../log';
import type { PromptEnhancer } from './prompt-enhancer';
import { DEFAULT_AVATAR_PNG } from '../files/default-avatar';
import { unawaitedViewWrite, type TaskViews } from '../tasks/task-views';

export interface VideoActivityDeps {
  channels: readonly VideoChannel[];
  blobs: BlobStore;
  enhancer: PromptEnhancer;
  upstreamTimeoutMs: number;
  retryInitialMs: number;
  retryMaxMs: number;
  /** Fetches user URLs (reference images, character clips): deadline, size cap, per-key slots. */
  userFetches: UserUrlFetcher;
  /** Largest finished video accepted from a provider. */
  maxVideoBytes?: number;
  /** Marks a stored task's charge as standing (billing.completeTask); idempotent. */
  settleCompleted?: (taskId: string) => Promise<EdgeOutcome>;
  /** A running job's progress is sent to the server at most this often (watch-job.ts). */
  progressEveryMs: number;
  /** ... and once it has moved at least this many points (watch-job.ts). */
  progressStep: number;
  /** Polls fall on a grid of this many ms, shared by every job (poll-grid.ts); 0: off. */
  pollGridMs: number;
  /** Where what concerns a channel rather than one task goes (a provider that refuses to list its jobs). */
  log?: Logger;
  /** The task views, to which a watching step reports its job's progress and lease; absent: none kept. */
  views?: Pick<TaskViews, 'watched'>;
}

type StoredImageRef = Extract<ImageRef, { kind: 'stored' }>;
type UrlImageRef = Extract<ImageRef, { kind: 'url' }>;
const isStored = (ref: ImageRef): ref is StoredImageRef => ref.kind === 'stored';

/** How long a step retries a user's URL that cannot be fetched (down, timing out, 5xx) before the task fails. */
const USER_URL_GIVE_UP_MS = 60_000;

/** How long the download step waits for the store to settle a charge before leaving it to the workflow. */
const SETTLE_WAIT_MS = 10_000;

/**
 * A watching step's reports to its task's view, not awaited: a store that is slow or away
 * delays no poll, and a view a report missed has its lease lapse, so reads ask Temporal.
 */
function reportTo(views: Pick<TaskViews, 'watched'>, taskId: string): NonNullable<JobWatchSteps['report']> {
  return (job, leaseMs) => unawaitedViewWrite('watch', views.watched(taskId, job, leaseMs));
}

/** Upstream and fetch errors in the workflow's terms. */
export function asFailure(err: unknown): unknown {
  if (err instanceof UpstreamError) {
    if (err.kind === 'rejected') return ApplicationFailure.nonRetryable(err.message, FAILURE_TYPES.upstreamRejected);
    return ApplicationFailure.create({
      message: err.message,
      type: 'UpstreamUnavailable',
      nextRetryDelay: err.retryAfterMs !== undefined ? Math.max(1000, err.retryAfterMs) : undefined,
    });
  }
  if (err instanceof FetchRejectedError) {
    // A user's URL that stays unreachable is the user's to fix: retried for a while, then the
    // task fails as invalid_input rather than wait out the step's hour.
    if (err.retryable && Date.now() - Context.current().info.scheduledTimestampMs < USER_URL_GIVE_UP_MS) {
      return ApplicationFailure.retryable(err.message, 'InputUnavailable');
    }
    const after = err.retryable ? ` (still failing after ${USER_URL_GIVE_UP_MS / 1000} s)` : '';
    return ApplicationFailure.nonRetryable(`${err.message}${after}`, FAILURE_TYPES.inputRejected);
  }
  if (err instanceof FetchSlotsBusyError) {
    // Retried by the server after the delay: the worker's activity slot is free meanwhile.
    // Benign: an expected turn-away, logged at debug (a busy key must not flood the log with warnings).
    return ApplicationFailure.create({
      message: err.message,
      type: 'UserFetchBusy',
      nextRetryDelay: err.retryAfterMs,
      category: ApplicationFailureCategory.BENIGN,
    });
  }
  return err;
}

export async function mapErrors<T>(fn: () => Promise<T>, map: (err: unknown) => unknown = asFailure): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw map(err);
  }
}

/**
 * A failed create attempt: as asFailure, but a retryable upstream error says whether the provider
 * surely took no job or may have (submit-outcome.ts), which decides whether the task may fail over.
 */
export function asSubmitFailure(err: unknown): unknown {
  const outcome = submitOutcome(err);
  if (!(err instanceof UpstreamError) || outcome === 'rejected') return asFailure(err);
  return ApplicationFailure.create({
    message: err.message,
    type: outcome === 'not_accepted' ? SUBMIT_FAILURE_TYPES.notAccepted : SUBMIT_FAILURE_TYPES.outcomeUnknown,
    nextRetryDelay: err.retryAfterMs !== undefined ? Math.max(1000, err.retryAfterMs) : undefined,
    // The workflow paces its own attempts on a channel that can fail over (it does not see nextRetryDelay).
    details: err.retryAfterMs !== undefined ? [{ retryAfterMs: err.retryAfterMs }] : undefined,
  });
}

/**
 * How often an upstream step (submit, remix, character, prompt) heartbeats. Its heartbeat
 * timeout (src/workflows/video-task.ts) is what tells the server that the worker running it
 * died: without it, the step would wait out its whole start-to-close timeout (minutes) before
 * another worker retries it. The heartbeats' answers also carry a cancellation to the step's
 * user-URL fetches. The worker throttles what reaches the server (src/worker.ts).
 */
const STEP_HEARTBEAT_MS = 1000;

/**
 * Runs an upstream step, heartbeating while it runs. A local activity (a submit's first attempt,
 * workflows/video-task.ts) has no heartbeat: the worker keeps its workflow task alive instead.
 */
export async function heartbeating<T>(fn: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  if (ctx.info.isLocal) return fn();
  ctx.heartbeat();
  const beat = setInterval(() => ctx.heartbeat(), STEP_HEARTBEAT_MS);
  try {
    return await fn();
  } finally {
    clearInterval(beat);
  }
}

export function createVideoActivities(deps: VideoActivityDeps) {
  const byName = new Map(deps.channels.map((c) => [c.name, c]));
  const clients = new Map<string, VideoUpstream>();
  const pollers = new Map<string, ChannelPoller>();

  function channelOf(name: string): VideoChannel {
    const channel = byName.get(name);
    if (!channel) throw ApplicationFailure.nonRetryable(`channel ${name} is no longer configured`, FAILURE_TYPES.noChannel);
    return channel;
  }

  function clientOf(channel: VideoChannel): VideoUpstream {
    let c = clients.get(channel.name);
    if (!c) {
      c = videoClientFor(channel, { requestMs: deps.upstreamTimeoutMs, pollMs: Math.min(deps.upstreamTimeoutMs, 20_000) });
      clients.set(channel.name, c);
    }
    return c;
  }

  function client(name: string): VideoUpstream {
    return clientOf(channelOf(name));
  }

  /**
   * How a watching step polls its job: through the channel's poller where the channel polls by
   * list and its provider has one, else with a request of its own (counted alike on
   * gateway_job_polls_total).
   */
  function jobPoll(name: string, jobId: string): Pick<JobWatchSteps, 'poll' | 'pollLeadMs'> {
    const channel = channelOf(name);
    const upstream = clientOf(channel);
    const list = upstream.listJobs?.bind(upstream);
    if (!channel.pollByList || !list) {
      return {
        poll: () => {
          metrics.jobPolls.inc({ channel: name, via: 'single' });
          return upstream.poll(jobId);
        },
        pollLeadMs: 0,
      };
    }
    let poller = pollers.get(name);
    if (!poller) {
      poller = new ChannelPoller({
        periodMs: channel.pollMs,
        poll: (id) => upstream.poll(id),
        listJobs: list,
        onListRefused: (err) =>
          deps.log?.warn({ channel: name, err: err.message }, 'the provider refused to list its jobs: this channel polls them one by one from now on'),
        onAnswered: (via, jobs) => metrics.jobPolls.inc({ channel: name, via }, jobs),
      });
      pollers.set(name, poller);
    }
    const shared = poller;
    return { poll: (dueAt, signal) => shared.pollAt(jobId, dueAt, signal), pollLeadMs: shared.leadMs };
  }

  /**
   * Runs `work` holding one of the owner's user-URL fetch slots in this worker, inside a
   * heartbeating step: the activity learns of a cancellation (the workflow cancelled or
   * terminated) only from a heartbeat's answer, and the cancellation aborts the fetches.
   * Thrown inside mapErrors, so a busy key's FetchSlotsBusyError becomes a delayed retry.
   */
  async function fetchingUserUrls<T>(ownerId: string, work: (fetchFile: FetchFile) => Promise<T>): Promise<T> {
    return deps.userFetches.forKey(ownerId, Context.current().cancellationSignal, work);
  }

  /** The body is sniffed from the file's first bytes, and read whole only when it is an image (the upstream submit sends bytes). */
  async function loadImage(ref: UrlImageRef, index: number, fetchFile: FetchFile): Promise<LoadedImage> {
    return fetchFile(ref.url, async (file) => {
      const mimeType = sniffImage(await readHead(file.path, 16));
      if (!mimeType) throw new FetchRejectedError(`images[${index}] is not a PNG, JPEG, WEBP or GIF image`);
      return { mimeType, bytes: await fs.promises.readFile(file.path) };
    });
  }

  async function loadStored(ref: StoredImageRef): Promise<LoadedImage> {
    return { mimeType: ref.mimeType, bytes: await deps.blobs.read(ref.key) };
  }

  async function loadImages(ownerId: string, refs: readonly ImageRef[]): Promise<LoadedImage[]> {
    // Only a step with URLs to fetch takes one of the owner's fetch slots.
    if (refs.every(isStored)) return Promise.all(refs.map(loadStored));
    return fetchingUserUrls(ownerId, (fetchFile) =>
      Promise.all(refs.map((ref, i) => (ref.kind === 'stored' ? loadStored(ref) : loadImage(ref, i, fetchFile)))),
    );
  }

  /**
   * Streams the provider's file into gateway storage (video_url then never points at the
   * provider) and settles the task's charge. `beat` is called every MiB written, so a stalled
   * download is noticed in seconds rather than at the step's timeout.
   */
  async function storeFile(taskId: string, channel: string, download: DownloadRef, beat: (written: number) => void): Promise<StoredVideoResult> {
    const upstream = client(channel);
    const video = await mapErrors(async () => {
      const res = await upstream.download(download);
      if (!res.body) throw new UpstreamError('video download: empty body', 'retryable');
      const key = storageKeys.video(taskId);
      const body = Readable.fromWeb(res.body as WebReadableStream<Uint8Array>);
      let lastBeat = 0;
      const bytes = await deps.blobs.write(key, body, {
        maxBytes: deps.maxVideoBytes ?? 2 * 1024 * 1024 * 1024,
        onProgress: (written) => {
          if (written - lastBeat > 1 << 20) {
            lastBeat = written;
            beat(written);
          }
        },
      });
      if (!isMp4(await deps.blobs.head(key, 16))) {
        throw new UpstreamError('video download: the provider returned something that is not an MP4 file', 'retryable');
      }
      return { key, contentType: 'video/mp4', bytes };
    });
    // Settled here, in the step that already runs, rather than by a step of its own: that
    // costs the workflow another round through the worker at every completion. A store that
    // cannot be reached leaves it to the workflow's settle step, which retries without limit.
    if (!deps.settleCompleted) return video;
    let timer: NodeJS.Timeout | undefined;
    let found: EdgeOutcome;
    try {
      // A store that does not answer is treated as one that cannot be reached (settling is idempotent).
      found = await Promise.race([
        deps.settleCompleted(taskId),
        new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('the store did not answer')), SETTLE_WAIT_MS))),
      ]);
    } catch (err) {
      Context.current().log.warn('the stored task could not be settled here; the workflow settles it', { taskId: taskId, err: (err as Error).message });
      return video;
    } finally {
      clearTimeout(timer);
    }
    if (found === 'refunded' || found === 'missing') {
      // Its charge was refunded while it ran: the file is not published, and the task fails.
      await deps.blobs.remove(video.key);
      throw ApplicationFailure.nonRetryable(
        `The task ${taskId} cannot complete: its charge was ${found === 'missing' ? 'never taken' : 'refunded'}.`,
        FAILURE_TYPES.chargeNotLive,
      );
    }
    return { ...video, chargeSettled: true };
  }

  return {
    /**
     * Which channel serves the task, and the next ones serving its model in failover order
     * (priority, then weight); decided once and kept in history, so every later call goes to the
     * same provider. A remix or a cast must go to the provider that holds its source: no fallbacks.
     */
    async planChannel(input: { model: string; channel?: string }): Promise<PlannedChannels> {
      const ordered = input.channel
        ? [byName.get(input.channel)].filter((c): c is VideoChannel => c !== undefined)
        : failoverOrder(channelsFor(deps.channels, input.model));
      const [first, ...rest] = ordered;
      if (!first) throw ApplicationFailure.nonRetryable(`no upstream channel ${input.channel ?? ''} serves model ${input.model}`, FAILURE_TYPES.noChannel);
      const plan = (channel: VideoChannel): ChannelPlan => ({
        channel: channel.name,
        upstreamModel: channel.models[input.model] ?? input.model,
        pollMs: channel.pollMs,
        expectedJobMs: channel.expectedJobMs,
        retryInitialMs: deps.retryInitialMs,
        retryMaxMs: deps.retryMaxMs,
        submitAttempts: channel.submitAttempts,
      });
      return { ...plan(first), fallbacks: rest.map(plan) };
    },

    async enhancePrompt(input: { prompt: string }): Promise<string> {
      return heartbeating(() => deps.enhancer.enhance(input.prompt));
    },

    /** ownerId: the key whose fetch slots the clip's fetch takes (absent in histories from before it: the task's own). */
    async createCharacter(input: {
      taskId: string;
      ownerId?: string;
      channel: string;
      source: CharacterSource;
      name?: string;
    }): Promise<{ id: string; name: string }> {
      const upstream = client(input.channel);
      if (!upstream.createCharacter) {
        throw ApplicationFailure.nonRetryable(`channel ${input.channel} cannot create characters`, FAILURE_TYPES.upstreamRejected);
      }
      const create = upstream.createCharacter;
      return heartbeating(() =>
        mapErrors(async () => {
          const source = input.source;
          const notMp4 = () => new FetchRejectedError(`${source.kind === 'url' ? 'the character URL' : 'the source task'} is not an MP4 video`);
          const clip =
            source.kind === 'task'
              ? await deps.blobs.read(source.videoKey)
              : await fetchingUserUrls(input.ownerId ?? `task:${input.taskId}`, (fetchFile) =>
                  fetchFile(source.url, async (file) => {
                    if (!isMp4(await readHead(file.path, 16))) throw notMp4();
                    return fs.promises.readFile(file.path);
                  }),
                );
          if (!isMp4(clip)) throw notMp4();
          const name = input.name ?? `gw_${randomBytes(5).toString('hex')}`;
          return create(name, clip, { timestamps: source.timestamps, selfPortrait: source.selfPortrait });
        }),
      );
    },

    /** The provider's picture of the character when it has one, else the gateway's default avatar. */
    async storeProfilePicture(input: { characterId: string; channel: string; upstreamId: string }): Promise<string> {
      const upstream = client(input.channel);
      const key = `characters/${input.characterId}.png`;
      const picture = await heartbeating(() => mapErrors(async () => (upstream.profilePicture ? await upstream.profilePicture(input.upstreamId) : null)));
      await deps.blobs.write(key, picture ?? DEFAULT_AVATAR_PNG);
      return key;
    },

    async submitVideo(input: { request: TaskRequest; plan: ChannelPlan; prompt: string; characterIds: string[] }): Promise<string> {
      const { request, plan } = input;
      const model = findVideoModel(request.model);
      if (!model) throw ApplicationFailure.nonRetryable(`unknown model ${request.model}`, FAILURE_TYPES.inputRejected);
      const upstream = client(plan.channel);
      return heartbeating(() =>
        mapErrors(async () => {
          const images = await loadImages(request.ownerId, request.images);
          return upstream.submit({
            taskId: request.taskId,
            upstreamModel: plan.upstreamModel,
            prompt: input.prompt,
            images,
            aspectRatio: model.honorsAspectRatio ? request.aspectRatio : undefined,
            imageRole: model.imageRole,
            seconds: request.seconds,
            size: request.size,
            enableUpsample: request.enableUpsample,
            watermark: request.watermark,
            private: request.private,
            characterIds: [...(request.cast?.characterIds ?? []), ...input.characterIds],
            style: request.style,
            metadata: request.metadata,
          });
        }, asSubmitFailure),
      );
    },

    async submitRemix(input: { request: TaskRequest; plan: ChannelPlan; prompt: string }): Promise<string> {
      const source = input.request.remixOf;
      if (!source) throw ApplicationFailure.nonRetryable('not a remix', FAILURE_TYPES.inputRejected);
      const upstream = client(input.plan.channel);
      const remix = upstream.remix?.bind(upstream);
      if (!remix) throw ApplicationFailure.nonRetryable(`channel ${input.plan.channel} cannot remix`, FAILURE_TYPES.upstreamRejected);
      return heartbeating(() =>
        mapErrors(() => remix({ taskId: input.request.taskId, sourceJobId: source.jobId, prompt: input.prompt, size: input.request.size }), asSubmitFailure),
      );
    },

    /** One poll: the step of the workflows begun before watchVideoJob (they replay with it). */
    async pollVideo(input: { channel: string; jobId: string }): Promise<PollResult> {
      const upstream = client(input.channel);
      return mapErrors(() => upstream.poll(input.jobId));
    },

    /** Polls the job until it ends and stores its file, in one step whatever its length (watch-job.ts). */
    async watchVideoJob(input: WatchJobInput): Promise<WatchJobResult> {
      return watchJob(
        input,
        {
          ...jobPoll(input.channel, input.jobId),
          store: (download, beat) => storeFile(input.taskId, input.channel, download, () => beat()),
          asFailure,
          ...(deps.views ? { report: reportTo(deps.views, input.taskId) } : {}),
        },
        { progressEveryMs: deps.progressEveryMs, progressStep: deps.progressStep, pollGridMs: deps.pollGridMs },
      );
    },

    /**
     * A cancelled task's job, stopped at the provider where its protocol allows (best-effort: the
     * workflow goes on whatever this answers). 'refused' when the provider would not (OpenAI
     * deletes only finished videos), 'unsupported' when its protocol has no such call (Veo).
     */
    async cancelUpstreamJob(input: { channel: string; jobId: string }): Promise<'cancelled' | 'refused' | 'unsupported'> {
      const upstream = client(input.channel);
      if (!upstream.cancel) return 'unsupported';
      const cancel = upstream.cancel.bind(upstream);
      try {
        return (await cancel(input.jobId)) ? 'cancelled' : 'refused';
      } catch (err) {
        if (err instanceof UpstreamError && err.kind === 'rejected') return 'refused';
        throw asFailure(err);
      }
    },

    /** A cancelled task's stored video, if its watching step stored one before the cancel reached it. */
    async removeStoredVideo(input: { taskId: string }): Promise<void> {
      await deps.blobs.remove(storageKeys.video(input.taskId));
    },

    /** The download step of the workflows begun before watchVideoJob stored the file itself. */
    async storeVideo(input: { taskId: string; channel: string; download: DownloadRef }): Promise<StoredVideoResult> {
      const ctx = Context.current();
      return storeFile(input.taskId, input.channel, input.download, (written) => ctx.heartbeat(written));
    },
  };
}

export type VideoActivities = ReturnType<typeof createVideoActivities>;
