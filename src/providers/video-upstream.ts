import type { TaskError } from '../tasks/task';

/** What one poll of an upstream job says, in the gateway's terms. */
export type PollResult =
  { phase: 'queued' | 'running'; progress: number | null } | { phase: 'succeeded'; download: DownloadRef } | { phase: 'failed'; error: TaskError };

/** One page of a channel's jobs, newest first: what `listJobs` answers. */
export interface JobPage {
  jobs: Array<{ id: string; result: PollResult }>;
  /** The cursor of the next page, or null on the last one. */
  next: string | null;
}

/** Where the finished file is; `authorized` means the request must carry the channel key. */
export interface DownloadRef {
  url: string;
}

export interface LoadedImage {
  mimeType: string;
  bytes: Buffer;
}

export interface SubmitInput {
  taskId: string;
  upstreamModel: string;
  prompt: string;
  images: LoadedImage[];
  aspectRatio?: '16:9' | '9:16';
  imageRole: 'first-frame' | 'first-last-frame' | 'components';
  seconds?: number;
  size?: string;
  enableUpsample: boolean;
  watermark: boolean;
  private: boolean;
  characterIds: string[];
  style?: string;
  metadata?: Record<string, unknown>;
}

export interface VideoUpstream {
  /** Starts the upstream job; returns the provider's job id. */
  submit(input: SubmitInput): Promise<string>;
  poll(jobId: string): Promise<PollResult>;
  /**
   * One page of the channel's jobs, newest first, where the provider lists them: lets one
   * request answer the polls of many jobs (activities/channel-poller.ts).
   */
  listJobs?(after: string | undefined): Promise<JobPage>;
  /** The finished file as a streaming response (redirects followed, key not leaked to them). */
  download(ref: DownloadRef): Promise<Response>;
  createCharacter?(name: string, clip: Buffer, options: { timestamps?: string; selfPortrait?: boolean }): Promise<{ id: string; name: string }>;
  /** The character's profile picture, or null when the provider has none. */
  profilePicture?(characterId: string): Promise<Buffer | null>;
  /**
   * Asks the provider to stop a job and drop it, where its protocol has a call for that; true
   * when it did. An UpstreamError `rejected` is the provider refusing (a job it cannot cancel).
   * Veo through the Gemini API has none: its video operations can only be read.
   */
  cancel?(jobId: string): Promise<boolean>;
  /** Starts a remix of a finished upstream job; returns the new job's id. */
  remix?(input: { taskId: string; sourceJobId: string; prompt: string; size?: string }): Promise<string>;
}
