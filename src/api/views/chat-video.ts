import type { TaskState } from '../../tasks/task';

/**
 * A video task told as a chat completion (spec 6): content lines `task_id: <id>`,
 * `progress: <n>%` on each change, `video_url: <url>` at the end, or `failed: <reason>`.
 * Each line ends with a newline so the concatenated message reads one line per event.
 */
export const chatLines = {
  taskId: (id: string) => `task_id: ${id}\n`,
  progress: (n: number) => `progress: ${n}%\n`,
  videoUrl: (url: string) => `video_url: ${url}\n`,
  failed: (state: TaskState) => `failed: ${state.error?.message ?? 'the video could not be generated'}\n`,
  /** The task was deleted while the answer followed it. */
  deleted: () => 'failed: the task was deleted\n',
};

export function finishReasonOf(state: TaskState): 'stop' | 'content_filter' {
  return state.status === 'failed' && state.error?.code === 'content_filtered' ? 'content_filter' : 'stop';
}

export interface ChunkContext {
  id: string;
  created: number;
  model: string;
}

export function chatChunk(c: ChunkContext, delta: { role?: 'assistant'; content?: string }, finishReason: string | null = null) {
  return {
    id: c.id,
    object: 'chat.completion.chunk' as const,
    created: c.created,
    model: c.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
}

export function chatCompletion(c: ChunkContext, content: string, finishReason: string) {
  return {
    id: c.id,
    object: 'chat.completion' as const,
    created: c.created,
    model: c.model,
    choices: [{ index: 0, message: { role: 'assistant' as const, content, refusal: null }, logprobs: null, finish_reason: finishReason }],
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  };
}
