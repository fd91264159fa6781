/**
 * The operator's view of a key's completion webhooks (README "Completion webhooks"): its
 * endpoint (set, clear), its signing secret (made by the first save or a rotation, shown once
 * with a copy button; afterwards only its hint), and its events with every delivery attempt.
 */
import { useState } from 'preact/hooks';
import { api } from '../api';
import { dateTime } from '../format';
import { useLoad } from '../hooks';
import type { WebhookDelivery, WebhookEndpoint } from '../types';
import { ErrorNote } from './ui';

function attemptText(a: WebhookDelivery['attempts'][number]): string {
  const outcome = a.http_status !== null ? `HTTP ${a.http_status}` : (a.error ?? 'no answer');
  return `#${a.attempt} ${new Date(a.at_ms).toLocaleTimeString()} ${outcome} (${a.duration_ms} ms)`;
}

export function KeyWebhook({ keyId }: { keyId: string }) {
  const path = `/admin/keys/${encodeURIComponent(keyId)}/webhook`;
  const endpoint = useLoad((signal) => api<WebhookEndpoint>(path, { signal }), [path]);
  const deliveries = useLoad((signal) => api<{ data: WebhookDelivery[] }>(`${path}/deliveries?limit=20`, { signal }), [path], 10_000);
  const [url, setUrl] = useState<string | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  const [note, setNote] = useState('');
  const [error, setError] = useState<Error | undefined>(undefined);
  const shownUrl = url ?? endpoint.data?.url ?? '';

  const run = async (what: () => Promise<string>) => {
    setError(undefined);
    setNote('');
    try {
      setNote(await what());
      endpoint.reload();
    } catch (err) {
      setError(err instanceof Error ? err : new Error(String(err)));
    }
  };
  const showSecret = (answer: WebhookEndpoint) => {
    setCopied(false);
    if (answer.secret) setSecret(answer.secret);
  };

  return (
    <div class="webhook">
      <h3>Completion webhook</h3>
      <ErrorNote error={endpoint.error ?? error} />
      {note ? (
        <p class="ok" role="status">
          {note}
        </p>
      ) : null}
      <form
        class="form inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          void run(async () => {
            const answer = await api<WebhookEndpoint>(path, { method: 'PUT', json: { url: shownUrl.trim() === '' ? null : shownUrl.trim() } });
            showSecret(answer);
            setUrl(null);
            return 'Webhook endpoint saved.';
          });
        }}
      >
        <label>
          Endpoint (https://; empty: only requests' callback_url)
          <input id="webhook-url" type="url" maxLength={2048} value={shownUrl} onInput={(e) => setUrl(e.currentTarget.value)} />
        </label>
        <div class="actions">
          <button type="submit">Save endpoint</button>
          <button
            type="button"
            onClick={() =>
              void run(async () => {
                showSecret(await api<WebhookEndpoint>(`${path}/rotate`, { method: 'POST' }));
                return 'Secret rotated: the previous one also signs for 24 hours.';
              })
            }
          >
            Rotate secret
          </button>
          {endpoint.data?.url ? (
            <button
              type="button"
              class="danger"
              onClick={() =>
                void run(async () => {
                  await api(path, { method: 'DELETE' });
                  setUrl(null);
                  return 'Webhook endpoint cleared.';
                })
              }
            >
              Clear endpoint
            </button>
          ) : null}
        </div>
      </form>
      <p class="muted">
        Secret: <span class="mono">{endpoint.data?.secret_hint ?? 'none yet (saving an endpoint or rotating makes one)'}</span>
        {endpoint.data?.previous_secret_expires_at ? ` — the previous one signs until ${dateTime(endpoint.data.previous_secret_expires_at)}` : ''}
      </p>
      {secret ? (
        <div class="secret" role="status">
          <p>The signing secret is shown only now:</p>
          <div class="secret-row">
            <code id="webhook-secret">{secret}</code>
            <button
              type="button"
              onClick={() =>
                void navigator.clipboard.writeText(secret).then(
                  () => setCopied(true),
                  () => setError(new Error('the clipboard refused the copy')),
                )
              }
            >
              {copied ? 'Copied' : 'Copy'}
            </button>
            <button type="button" onClick={() => setSecret(null)}>
              Done
            </button>
          </div>
        </div>
      ) : null}
      <h4>Deliveries</h4>
      <ErrorNote error={deliveries.error} />
      {deliveries.data && deliveries.data.data.length === 0 ? <p class="muted">No events yet.</p> : null}
      {deliveries.data && deliveries.data.data.length > 0 ? (
        <div class="table-wrap">
          <table class="webhook-deliveries">
            <thead>
              <tr>
                {['Event', 'Task', 'State', 'Created', 'Attempts'].map((h) => (
                  <th scope="col" key={h}>
                    {h}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {deliveries.data.data.map((d) => (
                <tr key={d.id} data-event-id={d.id}>
                  <td>{d.type}</td>
                  <td class="mono">{d.subject_id}</td>
                  <td>
                    <span class={`badge badge-${d.state === 'delivered' ? 'completed' : d.state === 'failed' ? 'failed' : 'pending'}`}>{d.state}</span>
                  </td>
                  <td>{dateTime(d.created_at)}</td>
                  <td>
                    <ol class="attempts">
                      {d.attempts.map((a) => (
                        <li key={a.attempt + ':' + a.at_ms}>{attemptText(a)}</li>
                      ))}
                    </ol>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </div>
  );
}
