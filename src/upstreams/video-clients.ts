import type { VideoChannel } from '../config/channels';
import { geminiVeoClient } from './gemini-veo/client';
import { openAiVideosClient } from './openai-videos/client';
import type { VideoUpstream } from './video-upstream';

export interface UpstreamTimeouts {
  /** submit, download, characters */
  requestMs: number;
  /** status polls: short, so a hung poll ends well inside the poll activity's 30 s */
  pollMs: number;
}

export function videoClientFor(channel: VideoChannel, timeouts: UpstreamTimeouts): VideoUpstream {
  switch (channel.type) {
    case 'gemini-veo':
      return geminiVeoClient(channel, timeouts);
    case 'openai-videos':
      return openAiVideosClient(channel, timeouts);
  }
}
