/** A CHANNELS_FILE for e2e gateways (channels.example.yaml documents the format). */
export interface ChannelEntry {
  name: string;
  type: 'anthropic-native' | 'openai-compatible' | 'gemini-veo' | 'openai-videos';
  baseUrl: string;
  /** Gateway model names (served under the same name upstream), or gateway -> upstream names. */
  models: readonly string[] | Record<string, string>;
  priority: number;
}

/** The YAML of a channels file holding `entries`, each with the simulator's key. */
export function channelsYaml(entries: readonly ChannelEntry[]): string {
  const lines = entries.map(
    (c) =>
      `  - name: ${c.name}\n    type: ${c.type}\n    base_url: ${c.baseUrl}\n    api_key: sim-key\n    models: ${JSON.stringify(c.models)}\n    priority: ${c.priority}\n`,
  );
  return `channels:\n${lines.join('')}`;
}
