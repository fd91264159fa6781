import { pause, untilAborted, type TextMarkers } from './faults';
import type { Reply } from './server';

export interface SseScript {
  /** Encoded frames, in order. */
  frames: string[];
  /** With [sim:midstream-error]: the index at which `errorFrame` replaces the rest of the stream. */
  failAt: number;
  errorFrame: string;
  /** Written after the last frame (OpenAI's `data: [DONE]`); none for Anthropic. */
  trailer?: string;
}

/**
 * A streamed text reply, whichever protocol encoded its frames: paced by [sim:delay=MS],
 * stuck after the first frame with [sim:hang] until the client leaves, cut by an error frame
 * with [sim:midstream-error].
 */
export function sseReply(script: SseScript, t: TextMarkers, slowMs: number): Reply {
  return {
    kind: 'stream',
    status: 200,
    contentType: 'text/event-stream; charset=utf-8',
    delayMs: slowMs,
    run: async ({ write, signal }) => {
      if (t.hang) {
        const first = script.frames[0];
        if (first) write(first);
        await untilAborted(signal);
        return;
      }
      for (let i = 0; i < script.frames.length; i += 1) {
        if (signal.aborted) return;
        if (i > 0) await pause(t.delayMs, signal);
        if (i === script.failAt) {
          write(script.errorFrame);
          return;
        }
        write(script.frames[i]!);
      }
      if (script.trailer !== undefined) {
        await pause(t.delayMs, signal);
        write(script.trailer);
      }
    },
  };
}
