/**
 * A chat playground that streams: cm models through POST /v1/messages, the other text models
 * through POST /v1/chat/completions, and the models served only by the Responses API through
 * POST /v1/responses, all with stream:true, read with fetch + ReadableStream
 * (sse.ts) so the answer grows on the page as its events arrive.
 */
import { useRef, useState } from 'preact/hooks';
import { errorOf, api, send } from '../api';
import { ErrorNote, Page } from '../components/ui';
import { useLoad } from '../hooks';
import { readSse, textOf } from '../sse';
import type { List, ModelEntry } from '../types';

interface Turn {
  role: 'user' | 'assistant';
  content: string;
}

const TEXT_OWNERS = new Set(['cm', 'openai-compatible']);

/** Where a text model is called: its first listed endpoint (chat completions before responses). */
function endpointOf(model: ModelEntry): string {
  if (model.owned_by === 'cm') return '/v1/messages';
  return model.endpoints?.[0] ?? '/v1/chat/completions';
}

export function Playground() {
  const models = useLoad((signal) => api<List<ModelEntry>>('/v1/models', { signal }), []);
  const textModels = (models.data?.data ?? []).filter((m) => TEXT_OWNERS.has(m.owned_by));
  const [modelId, setModelId] = useState('');
  const model = textModels.find((m) => m.id === modelId) ?? textModels[0];
  const [maxTokens, setMaxTokens] = useState(512);
  const [input, setInput] = useState('');
  const [turns, setTurns] = useState<Turn[]>([]);
  const [streaming, setStreaming] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  const abort = useRef<AbortController | null>(null);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!model || input.trim() === '' || streaming) return;
    const history: Turn[] = [...turns, { role: 'user', content: input }];
    setTurns([...history, { role: 'assistant', content: '' }]);
    setInput('');
    setError(undefined);
    setStreaming(true);
    const controller = new AbortController();
    abort.current = controller;
    const path = endpointOf(model);
    let answer = '';
    try {
      const res = await send(path, {
        // The same body suits messages and chat completions for plain text turns; the Responses
        // API takes the turns as its input items, and at least 16 output tokens.
        json:
          path === '/v1/responses'
            ? { model: model.id, max_output_tokens: Math.max(16, maxTokens), stream: true, input: history }
            : { model: model.id, max_tokens: maxTokens, stream: true, messages: history },
        signal: controller.signal,
      });
      if (!res.ok || !res.body) throw await errorOf(res);
      for await (const event of readSse(res.body)) {
        const part = textOf(event);
        if (part.error) throw new Error(part.error);
        if (part.text) {
          answer += part.text;
          setTurns([...history, { role: 'assistant', content: answer }]);
        }
        if (part.done) break;
      }
    } catch (err) {
      if (!controller.signal.aborted) setError(err instanceof Error ? err : new Error(String(err)));
    } finally {
      setStreaming(false);
      abort.current = null;
    }
  };

  return (
    <Page title="Playground">
      <ErrorNote error={models.error} />
      <form class="form playground" onSubmit={submit}>
        <div class="row">
          <label>
            Model
            <select id="chat-model" value={model?.id ?? ''} onChange={(e) => setModelId(e.currentTarget.value)}>
              {textModels.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.id} ({endpointOf(m)})
                </option>
              ))}
            </select>
          </label>
          <label>
            Max tokens
            <input type="number" min={1} max={8192} value={maxTokens} onInput={(e) => setMaxTokens(Number(e.currentTarget.value) || 1)} />
          </label>
          <button type="button" onClick={() => setTurns([])} disabled={streaming}>
            Clear
          </button>
        </div>
        <ol class="conversation" aria-live="polite">
          {turns.map((t, i) => (
            <li key={i} class={`turn turn-${t.role}`}>
              <span class="turn-role">{t.role === 'user' ? 'You' : (model?.id ?? 'assistant')}</span>
              <div class="turn-text" data-streaming={streaming && i === turns.length - 1 ? 'true' : undefined}>
                {t.content}
              </div>
            </li>
          ))}
        </ol>
        <label>
          Message
          <input id="chat-input" value={input} onInput={(e) => setInput(e.currentTarget.value)} placeholder="Ask something; Enter sends" autocomplete="off" />
        </label>
        <ErrorNote error={error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={streaming || !model}>
            Send
          </button>
          {streaming ? (
            <button type="button" onClick={() => abort.current?.abort()}>
              Stop
            </button>
          ) : null}
        </div>
      </form>
    </Page>
  );
}
