/** A CHANNELS_FILE for e2e gateways (channels.example.yaml documents the format). */
export interface ChannelEntry {
  name: string;
  type: 'anthropic-native' | 'openai-compatible' | 'gemini-veo' | 'openai-videos';
  baseUrl: string;
  /** Gateway model names (served under the same name upstream), or gateway -> upstream names. */
  models: readonly string[] | Record<string, string>;
  priority?: number;
  /** Further keys of the entry, as channels.example.yaml names them (poll_ms, poll_by_list, ...). */
  settings?: Record<string, string | number | boolean>;
}

/** The YAML of a channels file holding `entries`, each with the simulator's key. */
export function channelsYaml(entries: readonly ChannelEntry[]): string {
  const lines = entries.map((c) => {
    const keys: Record<string, unknown> = {
      type: c.type,
      base_url: c.baseUrl,
      api_key: 'sim-key',
      models: JSON.stringify(c.models),
      priority: c.priority,
      ...c.settings,
    };
    const body = Object.entries(keys)
      .filter(([, value]) => value !== undefined)
      .map(([key, value]) => `    ${key}: ${String(value)}\n`);
    return `  - name: ${c.name}\n${body.join('')}`;
  });
  return `channels:\n${lines.join('')}`;
}
