/** The key's video tasks, live (polled every 2 s), and one task's page: timeline and video. */
import { api, query } from '../api';
import { TaskTable } from '../components/task-table';
import { ErrorNote, Link, Page, Progress, Status } from '../components/ui';
import { dateTime } from '../format';
import { useLoad } from '../hooks';
import { BASE } from '../router';
import type { List, Timeline, VideoItem } from '../types';

const POLL_MS = 2000;

export function Tasks() {
  const tasks = useLoad((signal) => api<List<VideoItem>>(`/v1/videos${query({ limit: 50 })}`, { signal }), [], POLL_MS);
  return (
    <Page
      title="Tasks"
      actions={
        <Link href={`${BASE}/create`} class="button">
          New video
        </Link>
      }
    >
      <ErrorNote error={tasks.error} />
      {tasks.data && tasks.data.data.length === 0 ? <p class="muted">No video tasks yet.</p> : null}
      {tasks.data && tasks.data.data.length > 0 ? <TaskTable tasks={tasks.data.data} /> : null}
    </Page>
  );
}

export function TaskPage({ id }: { id: string }) {
  const path = `/v1/videos/${encodeURIComponent(id)}`;
  const task = useLoad((signal) => api<VideoItem>(path, { signal }), [id], POLL_MS);
  const done = task.data?.status === 'completed' || task.data?.status === 'failed';
  const timeline = useLoad((signal) => api<Timeline>(`${path}/timeline`, { signal }), [id, done], done ? undefined : POLL_MS);
  const t = task.data;
  // The vidgen read shape has no model; the id of a /v1/video/create task starts with it.
  const model = t?.model ?? (id.includes(':') ? id.slice(0, id.indexOf(':')) : undefined);

  return (
    <Page title={`Task ${id}`}>
      <p>
        <Link href={`${BASE}/tasks`}>Back to tasks</Link>
      </p>
      <ErrorNote error={task.error} />
      {t ? (
        <div class="task-detail">
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <Status status={t.status} />
            </dd>
            <dt>Progress</dt>
            <dd>
              <Progress value={t.progress} label="Task progress" />
            </dd>
            {model ? (
              <>
                <dt>Model</dt>
                <dd>{model}</dd>
              </>
            ) : null}
            {t.seconds ? (
              <>
                <dt>Seconds</dt>
                <dd>{t.seconds}</dd>
              </>
            ) : null}
            {t.size ? (
              <>
                <dt>Size</dt>
                <dd>{t.size}</dd>
              </>
            ) : null}
            {t.error ? (
              <>
                <dt>Error</dt>
                <dd class="error">
                  {t.error.code}: {t.error.message}
                </dd>
              </>
            ) : null}
          </dl>
          {t.status === 'completed' && t.video_url ? (
            <video class="player" controls preload="auto" src={t.video_url} aria-label={`Video of task ${id}`} />
          ) : null}
        </div>
      ) : null}
      <section class="panel" aria-labelledby="timeline-title">
        <h2 id="timeline-title">Timeline</h2>
        <ErrorNote error={timeline.error} />
        {timeline.data ? (
          <ol class="timeline">
            {timeline.data.data.map((e, i) => (
              <li key={`${e.event}-${i}`} data-event={e.event}>
                <time dateTime={new Date(e.at * 1000).toISOString()}>{dateTime(e.at)}</time> <strong>{e.event}</strong>
                {e.detail ? <span class="muted"> {e.detail}</span> : null}
              </li>
            ))}
          </ol>
        ) : null}
      </section>
    </Page>
  );
}
