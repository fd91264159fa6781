/** The operator's channels (health, errors, cooldowns), all tasks across keys, and the ledger audit. */
import { useState } from 'preact/hooks';
import { api, query } from '../api';
import { TaskTable } from '../components/task-table';
import { ErrorNote, Page } from '../components/ui';
import { dateTime } from '../format';
import { useLoad } from '../hooks';
import { VIDEO_MODELS } from '../../../src/catalog/models';
import type { AuditReport, Channel, List, VideoItem } from '../types';

export function AdminChannels() {
  const channels = useLoad((signal) => api<List<Channel>>('/admin/channels', { signal }), [], 5000);
  const figure = (n: number | null) => (n === null ? '–' : String(n));
  return (
    <Page title="Channels">
      <p class="muted">
        Text channels carry this process's figures since it started: failures in a row, a rest (cooldown) after the threshold, the requests that failed over to
        the next channel. Video channels carry the failures the worker recorded in the last 24 hours; one is failing after a retryable failure within 5 minutes.
        Refreshed every 5 s.
      </p>
      <ErrorNote error={channels.error} />
      {channels.data ? (
        <div class="table-wrap">
          <table class="channels">
            <thead>
              <tr>
                <th scope="col">Channel</th>
                <th scope="col">Kind</th>
                <th scope="col">Type</th>
                <th scope="col">State</th>
                <th scope="col">Resting until</th>
                <th scope="col" class="num">
                  Failures in a row
                </th>
                <th scope="col" class="num">
                  Served
                </th>
                <th scope="col" class="num">
                  Failed
                </th>
                <th scope="col" class="num">
                  Cooldowns
                </th>
                <th scope="col" class="num">
                  Failovers
                </th>
                <th scope="col">Recent errors</th>
                <th scope="col">Models</th>
              </tr>
            </thead>
            <tbody>
              {channels.data.data.map((c) => (
                <tr key={`${c.kind}:${c.name}`}>
                  <td>
                    {c.name}
                    {c.simulated ? <span class="badge">simulated</span> : null}
                  </td>
                  <td>{c.kind}</td>
                  <td>{c.type}</td>
                  <td>
                    <span class={`badge badge-${c.state}`}>{c.state}</span>
                  </td>
                  <td>{c.resting_until ? dateTime(c.resting_until) : ''}</td>
                  <td class="num">{figure(c.consecutive_failures)}</td>
                  <td class="num">{figure(c.served)}</td>
                  <td class="num">{c.failed}</td>
                  <td class="num">{figure(c.cooldowns)}</td>
                  <td class="num">{figure(c.failovers)}</td>
                  <td class="wrap">
                    {c.recent_errors.length > 0 ? (
                      <ul class="errors">
                        {c.recent_errors.map((e, i) => (
                          <li key={i}>
                            <span class="muted">{dateTime(e.at)}</span> {e.message}
                          </li>
                        ))}
                      </ul>
                    ) : (
                      ''
                    )}
                  </td>
                  <td class="wrap models">{c.models.join(', ')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </Page>
  );
}

interface TaskFilters {
  model: string;
  status: string;
  key_id: string;
}

export function AdminTasks() {
  const [draft, setDraft] = useState<TaskFilters>({ model: '', status: '', key_id: '' });
  const [filters, setFilters] = useState<TaskFilters>(draft);
  const [after, setAfter] = useState<string[]>([]);
  const cursor = after[after.length - 1];
  const tasks = useLoad(
    (signal) => api<List<VideoItem>>(`/admin/tasks${query({ ...filters, limit: 50, after: cursor })}`, { signal }),
    [filters, cursor],
    5000,
  );
  const set = (name: keyof TaskFilters) => (e: Event) => setDraft({ ...draft, [name]: (e.currentTarget as HTMLInputElement).value });

  return (
    <Page title="All tasks">
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setAfter([]);
          setFilters(draft);
        }}
      >
        <label>
          Model
          <select value={draft.model} onChange={set('model')}>
            <option value="">all</option>
            {VIDEO_MODELS.map((m) => (
              <option key={m.id} value={m.id}>
                {m.id}
              </option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select value={draft.status} onChange={set('status')}>
            <option value="">all</option>
            <option value="pending">pending</option>
            <option value="processing">processing</option>
            <option value="completed">completed</option>
            <option value="failed">failed</option>
          </select>
        </label>
        <label>
          Key id
          <input value={draft.key_id} onInput={set('key_id')} placeholder="key_…" />
        </label>
        <button type="submit">Filter</button>
      </form>
      <ErrorNote error={tasks.error} />
      {tasks.data ? (
        <>
          {tasks.data.data.length === 0 ? <p class="muted">No tasks.</p> : <TaskTable tasks={tasks.data.data} operator />}
          <div class="pager">
            <button type="button" disabled={after.length === 0} onClick={() => setAfter(after.slice(0, -1))}>
              Newer
            </button>
            <button
              type="button"
              disabled={!tasks.data.has_more || !tasks.data.last_id}
              onClick={() => tasks.data?.last_id && setAfter([...after, tasks.data.last_id])}
            >
              Older
            </button>
          </div>
        </>
      ) : null}
    </Page>
  );
}

export function AdminAudit() {
  const [report, setReport] = useState<AuditReport | null>(null);
  const [ranAt, setRanAt] = useState<number | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  const run = async () => {
    setBusy(true);
    setError(undefined);
    try {
      setReport(await api<AuditReport>('/admin/audit'));
      setRanAt(Date.now() / 1000);
    } catch (err) {
      setError(err instanceof Error ? err : new Error(String(err)));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Page title="Ledger audit">
      <p>Recomputes every balance from the ledger and checks each paid task's charge and refund against its state.</p>
      <button type="button" class="primary" onClick={() => void run()} disabled={busy}>
        {busy ? 'Auditing…' : 'Run the audit'}
      </button>
      <ErrorNote error={error} />
      {report ? (
        <div class="panel" role="status">
          <p>
            {dateTime(ranAt)}: {report.keys} keys, {report.entries} entries, {report.tasks} tasks.{' '}
            {report.mismatches.length === 0 ? (
              <strong class="ok">No mismatches.</strong>
            ) : (
              <strong class="error">{report.mismatches.length} mismatches.</strong>
            )}
          </p>
          {report.mismatches.length > 0 ? (
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Key</th>
                    <th scope="col">Problem</th>
                    <th scope="col">Ref</th>
                    <th scope="col" class="num">
                      Expected
                    </th>
                    <th scope="col" class="num">
                      Actual
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {report.mismatches.map((m, i) => (
                    <tr key={i}>
                      <td class="mono">{m.key_id}</td>
                      <td>{m.problem}</td>
                      <td class="mono">{m.ref ?? ''}</td>
                      <td class="num">{m.expected ?? ''}</td>
                      <td class="num">{m.actual ?? ''}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          ) : null}
        </div>
      ) : null}
    </Page>
  );
}
