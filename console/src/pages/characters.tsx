/** The key's characters with their profile pictures, and a form to make one from a finished task. */
import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorNote, Page } from '../components/ui';
import { useLoad } from '../hooks';
import type { Character, List, VideoItem } from '../types';

export function Characters() {
  const characters = useLoad((signal) => api<List<Character>>('/motion/v1/characters?limit=100', { signal }), []);
  const tasks = useLoad((signal) => api<List<VideoItem>>('/v1/videos?limit=100', { signal }), []);
  const motionDone = (tasks.data?.data ?? []).filter((t) => t.status === 'completed' && t.model?.startsWith('motion') === true);
  const [fromTask, setFromTask] = useState('');
  const [timestamps, setTimestamps] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);

  const create = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await api<Character>('/motion/v1/characters', { json: { from_task: fromTask, ...(timestamps ? { timestamps } : {}) } });
      characters.reload();
    } catch (err) {
      setError(err instanceof Error ? err : new Error(String(err)));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Page title="Characters">
      <ErrorNote error={characters.error} />
      {characters.data && characters.data.data.length === 0 ? <p class="muted">No characters yet.</p> : null}
      <ul class="character-grid">
        {(characters.data?.data ?? []).map((c) => (
          <li key={c.id} class="character">
            {c.profile_picture_url ? (
              <img src={c.profile_picture_url} alt={`Profile picture of @${c.username}`} width={96} height={96} />
            ) : (
              <span class="avatar-empty" />
            )}
            <span class="character-name">@{c.username}</span>
            <span class="mono muted">{c.id}</span>
          </li>
        ))}
      </ul>
      <section class="panel" aria-labelledby="new-character">
        <h2 id="new-character">New character from a task</h2>
        <form class="form" onSubmit={create}>
          <label>
            Completed motion task
            <select required value={fromTask} onChange={(e) => setFromTask(e.currentTarget.value)}>
              <option value="">choose a task</option>
              {motionDone.map((t) => (
                <option key={t.id} value={t.id}>
                  {t.id}
                </option>
              ))}
            </select>
          </label>
          <label>
            Span (start,end seconds, 1 to 3 s; optional)
            <input value={timestamps} onInput={(e) => setTimestamps(e.currentTarget.value)} placeholder="0,2" pattern="\d+(\.\d+)?,\d+(\.\d+)?" />
          </label>
          <ErrorNote error={error} />
          <div class="actions">
            <button type="submit" class="primary" disabled={busy}>
              {busy ? 'Making the character…' : 'Make character'}
            </button>
          </div>
        </form>
      </section>
    </Page>
  );
}
