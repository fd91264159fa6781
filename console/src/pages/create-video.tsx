/**
 * A video task from a form whose fields follow the model (src/catalog/models.ts, bundled at
 * build time): models served on /v1/videos are sent there as multipart (seconds, size, the
 * image as input_reference); the others go to /v1/video/create as JSON (aspect ratio where the
 * model honours it, up to maxImages images as data: URLs). Motion prompts can cast the key's
 * characters: the picker inserts `@username` at the cursor.
 */
import { useRef, useState } from 'preact/hooks';
import { VIDEO_MODELS, findVideoModel, type VideoModel } from '../../../src/catalog/models';
import { ApiError, api } from '../api';
import { ErrorNote, Page } from '../components/ui';
import { useLoad } from '../hooks';
import { BASE, navigate } from '../router';
import type { Character, List } from '../types';

const IMAGE_TYPES = 'image/png,image/jpeg,image/webp,image/gif';

function usesVideosEndpoint(model: VideoModel): boolean {
  return model.endpoints.includes('videos');
}

function dataUrl(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error('cannot read the file'));
    reader.readAsDataURL(file);
  });
}

export function CreateVideo() {
  const [modelId, setModelId] = useState('vidgen3');
  const model = findVideoModel(modelId) ?? VIDEO_MODELS[0];
  const [prompt, setPrompt] = useState('');
  const [seconds, setSeconds] = useState('');
  const [size, setSize] = useState('');
  const [aspect, setAspect] = useState('16:9');
  const [enhance, setEnhance] = useState(false);
  const [files, setFiles] = useState<File[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  const promptRef = useRef<HTMLTextAreaElement>(null);
  const characters = useLoad((signal) => api<List<Character>>('/motion/v1/characters?limit=50', { signal }).catch(() => undefined), []);
  if (!model) return null;
  const viaVideos = usesVideosEndpoint(model);
  const secondsValue = seconds || String(model.seconds?.[0] ?? '');
  const sizeValue = size || (model.sizes?.[0] ?? '');
  const imageRequired = viaVideos && model.family === 'vidgen';

  const insertMention = (username: string) => {
    const area = promptRef.current;
    const mention = `@${username}`;
    const start = area?.selectionStart ?? prompt.length;
    const end = area?.selectionEnd ?? prompt.length;
    const before = prompt.slice(0, start);
    const pad = before === '' || before.endsWith(' ') ? '' : ' ';
    const next = `${before}${pad}${mention} ${prompt.slice(end)}`;
    setPrompt(next);
    requestAnimationFrame(() => {
      area?.focus();
      const caret = before.length + pad.length + mention.length + 1;
      area?.setSelectionRange(caret, caret);
    });
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      let id: string;
      if (viaVideos) {
        const form = new FormData();
        form.set('model', model.id);
        form.set('prompt', prompt);
        form.set('seconds', secondsValue);
        form.set('size', sizeValue);
        const image = files[0];
        if (image) form.set('input_reference', image, image.name);
        id = (await api<{ id: string }>('/v1/videos', { form })).id;
      } else {
        const body: Record<string, unknown> = { model: model.id, prompt, enhance_prompt: enhance };
        if (model.honorsAspectRatio) body.aspect_ratio = aspect;
        if (files.length) body.images = await Promise.all(files.slice(0, model.maxImages).map(dataUrl));
        id = (await api<{ id: string }>('/v1/video/create', { json: body })).id;
      }
      navigate(`${BASE}/tasks/${encodeURIComponent(id)}`);
    } catch (err) {
      setError(err instanceof Error ? err : new ApiError(0, String(err), null));
    } finally {
      setBusy(false);
    }
  };

  const chars = characters.data?.data ?? [];
  return (
    <Page title="New video">
      <form class="form" onSubmit={submit}>
        <label>
          Model
          <select
            id="video-model"
            value={model.id}
            onChange={(e) => {
              setModelId(e.currentTarget.value);
              setSeconds('');
              setSize('');
              setFiles([]);
            }}
          >
            {VIDEO_MODELS.map((m) => (
              <option key={m.id} value={m.id}>
                {m.id}
              </option>
            ))}
          </select>
        </label>
        <p class="hint">
          {model.family} family, sent to {viaVideos ? 'POST /v1/videos' : 'POST /v1/video/create'}; up to {model.maxImages} image
          {model.maxImages === 1 ? '' : 's'} ({model.imageRole.replace(/-/g, ' ')}).
        </p>
        <label>
          Prompt
          <textarea id="video-prompt" ref={promptRef} required maxLength={32000} rows={4} value={prompt} onInput={(e) => setPrompt(e.currentTarget.value)} />
        </label>
        {model.family === 'motion' ? (
          <fieldset class="characters-picker">
            <legend>Cast a character</legend>
            {chars.length === 0 ? <p class="muted">No characters yet (make one on the Characters page).</p> : null}
            {chars.map((c) => (
              <button type="button" class="chip" key={c.id} onClick={() => insertMention(c.username)}>
                {c.profile_picture_url ? <img src={c.profile_picture_url} alt="" width={24} height={24} /> : null}@{c.username}
              </button>
            ))}
          </fieldset>
        ) : null}
        {viaVideos && model.seconds ? (
          <label>
            Seconds
            <select id="video-seconds" value={secondsValue} onChange={(e) => setSeconds(e.currentTarget.value)}>
              {model.seconds.map((s) => (
                <option key={s} value={String(s)}>
                  {s}
                </option>
              ))}
            </select>
          </label>
        ) : null}
        {viaVideos && model.sizes ? (
          <label>
            Size
            <select id="video-size" value={sizeValue} onChange={(e) => setSize(e.currentTarget.value)}>
              {model.sizes.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </label>
        ) : null}
        {!viaVideos && model.honorsAspectRatio ? (
          <label>
            Aspect ratio
            <select id="video-aspect" value={aspect} onChange={(e) => setAspect(e.currentTarget.value)}>
              <option value="16:9">16:9 (landscape)</option>
              <option value="9:16">9:16 (portrait)</option>
            </select>
          </label>
        ) : null}
        {!viaVideos ? (
          <label class="check">
            <input type="checkbox" checked={enhance} onChange={(e) => setEnhance(e.currentTarget.checked)} /> Enhance the prompt
          </label>
        ) : null}
        <label>
          {viaVideos ? `Reference image${imageRequired ? ' (required)' : ' (optional)'}` : `Images (up to ${model.maxImages}, optional)`}
          <input
            id="video-images"
            type="file"
            accept={IMAGE_TYPES}
            multiple={!viaVideos && model.maxImages > 1}
            required={imageRequired}
            onChange={(e) => {
              const picked = [...(e.currentTarget.files ?? [])];
              const limit = viaVideos ? 1 : model.maxImages;
              setFiles(picked.slice(0, limit));
              setError(
                picked.length > limit
                  ? new Error(`${model.id} takes at most ${limit} image${limit === 1 ? '' : 's'}; the first ${limit} are used.`)
                  : undefined,
              );
            }}
          />
        </label>
        <ErrorNote error={error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            {busy ? 'Creating…' : 'Create video'}
          </button>
        </div>
      </form>
    </Page>
  );
}
