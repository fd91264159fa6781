/** Video tasks as a table: the key holder's list (each task linking to its page) and the operator's (with its key and its run in the Temporal Web UI). */
import { Link, Progress, Status } from './ui';
import { age, credits } from '../format';
import { BASE } from '../router';
import type { VideoItem } from '../types';

export function TaskTable({ tasks, operator = false }: { tasks: readonly VideoItem[]; operator?: boolean }) {
  return (
    <div class="table-wrap">
      <table class="tasks">
        <thead>
          <tr>
            <th scope="col">Task</th>
            {operator ? <th scope="col">Key</th> : null}
            <th scope="col">Status</th>
            <th scope="col">Progress</th>
            <th scope="col">Model</th>
            {operator ? <th scope="col">Channel</th> : null}
            <th scope="col">Age</th>
            <th scope="col" class="num">
              Cost
            </th>
            {operator ? <th scope="col">Run</th> : null}
          </tr>
        </thead>
        <tbody>
          {tasks.map((t) => (
            <tr key={t.id} data-task-id={t.id}>
              {/* A task's page is the key holder's: the operator's row names the task and links its run instead. */}
              <td class="mono">{operator ? t.id : <Link href={`${BASE}/tasks/${encodeURIComponent(t.id)}`}>{t.id}</Link>}</td>
              {operator ? <td class="mono">{t.key_id ?? ''}</td> : null}
              <td>
                <Status status={t.status} />
              </td>
              <td>
                <Progress value={t.progress} label={`Progress of ${t.id}`} />
              </td>
              <td>{t.model}</td>
              {operator ? <td title={t.upstream_job_id ? `Provider's job id: ${t.upstream_job_id}` : undefined}>{channelOf(t)}</td> : null}
              <td>{age(t.created_at)}</td>
              <td class="num">{t.cost === undefined ? '' : credits(t.cost)}</td>
              {operator ? (
                <td>
                  {t.temporal_ui_url ? (
                    <a href={t.temporal_ui_url} target="_blank" rel="noopener noreferrer">
                      Temporal<span class="visually-hidden"> run of {t.id}</span>
                    </a>
                  ) : (
                    ''
                  )}
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The channel that took the task's job, and those its submit failed over from (README "Video failover"). */
function channelOf(t: VideoItem): string {
  const from = (t.failovers ?? []).map((f) => f.from);
  return `${t.channel ?? ''}${from.length > 0 ? ` (failed over from ${from.join(', ')})` : ''}`;
}
