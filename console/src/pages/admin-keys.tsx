/**
 * The operator's keys: create one (its secret shown once, with a copy button), and per key its
 * balance and spend, a credit grant or removal, its limits, its completion webhook (endpoint,
 * secret, deliveries), its ledger, and revocation.
 */
import { useState } from 'preact/hooks';
import { api } from '../api';
import { KeyWebhook } from '../components/key-webhook';
import { LedgerTable } from '../components/ledger-table';
import { ErrorNote, Page } from '../components/ui';
import { credits, dateTime } from '../format';
import { useLoad } from '../hooks';
import type { AdminKey, CreatedKey, List } from '../types';

/** An optional whole number from a form field: '' is "none" (null). */
function limitOf(value: string): number | null {
  return value.trim() === '' ? null : Number(value);
}

function CreateKey({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [quota, setQuota] = useState('');
  const [rpm, setRpm] = useState('');
  const [concurrent, setConcurrent] = useState('');
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const [copied, setCopied] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    setCopied(false);
    try {
      const body: Record<string, unknown> = { name };
      if (quota.trim() !== '') body.quota = Number(quota);
      if (rpm.trim() !== '') body.rate_limit_rpm = Number(rpm);
      if (concurrent.trim() !== '') body.max_concurrent_tasks = Number(concurrent);
      setCreated(await api<CreatedKey>('/admin/keys', { json: body }));
      setName('');
      onCreated();
    } catch (err) {
      setError(err instanceof Error ? err : new Error(String(err)));
    }
  };

  const copy = async () => {
    if (!created) return;
    try {
      await navigator.clipboard.writeText(created.key);
      setCopied(true);
    } catch (err) {
      setError(err instanceof Error ? err : new Error('the clipboard refused the copy'));
    }
  };

  return (
    <section class="panel" aria-labelledby="create-key">
      <h2 id="create-key">Create a key</h2>
      <form class="form inline-form" onSubmit={submit}>
        <label>
          Name
          <input id="key-name" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <label>
          Quota (credits; empty: unlimited)
          <input id="key-quota" type="number" min={0} step={1} value={quota} onInput={(e) => setQuota(e.currentTarget.value)} />
        </label>
        <label>
          Requests / min
          <input type="number" min={1} step={1} value={rpm} onInput={(e) => setRpm(e.currentTarget.value)} />
        </label>
        <label>
          Concurrent tasks (videos, background responses)
          <input type="number" min={1} step={1} value={concurrent} onInput={(e) => setConcurrent(e.currentTarget.value)} />
        </label>
        <div class="actions">
          <button type="submit" class="primary">
            Create key
          </button>
        </div>
      </form>
      <ErrorNote error={error} />
      {created ? (
        <div class="secret" role="status">
          <p>
            Key <strong>{created.name}</strong> ({created.id}) was created. Its secret is shown only now:
          </p>
          <div class="secret-row">
            <code id="new-key-secret">{created.key}</code>
            <button type="button" onClick={copy}>
              {copied ? 'Copied' : 'Copy'}
            </button>
            <button type="button" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
        </div>
      ) : null}
    </section>
  );
}

function KeyPanel({ k, onChange }: { k: AdminKey; onChange: () => void }) {
  const [delta, setDelta] = useState('');
  const [reason, setReason] = useState('');
  const [rpm, setRpm] = useState(k.rate_limit_rpm === null ? '' : String(k.rate_limit_rpm));
  const [concurrent, setConcurrent] = useState(k.max_concurrent_tasks === null ? '' : String(k.max_concurrent_tasks));
  const [textInFlight, setTextInFlight] = useState(k.max_text_in_flight === null ? '' : String(k.max_text_in_flight));
  const [confirmRevoke, setConfirmRevoke] = useState(false);
  const [note, setNote] = useState('');
  const [error, setError] = useState<Error | undefined>(undefined);
  const path = `/admin/keys/${encodeURIComponent(k.id)}`;

  const run = async (what: () => Promise<string>) => {
    setError(undefined);
    setNote('');
    try {
      setNote(await what());
      onChange();
    } catch (err) {
      setError(err instanceof Error ? err : new Error(String(err)));
    }
  };

  return (
    <section class="panel key-panel" aria-labelledby="key-panel-title">
      <h2 id="key-panel-title">
        {k.name} <span class="mono muted">{k.id}</span>
      </h2>
      <p>
        Balance <strong>{credits(k.balance)}</strong>, spent <strong>{credits(k.spent ?? 0)}</strong>
        {k.revoked_at ? <span class="badge badge-failed">revoked {dateTime(k.revoked_at)}</span> : null}
      </p>
      {note ? (
        <p class="ok" role="status">
          {note}
        </p>
      ) : null}
      <ErrorNote error={error} />
      {!k.revoked_at ? (
        <div class="key-forms">
          <form
            class="form"
            onSubmit={(e) => {
              e.preventDefault();
              void run(async () => {
                const r = await api<{ balance: number }>(`${path}/quota`, { json: { delta: Number(delta), ...(reason ? { reason } : {}) } });
                setDelta('');
                return `Balance is now ${credits(r.balance)}.`;
              });
            }}
          >
            <h3>Credits</h3>
            <label>
              Grant (negative removes)
              <input id="grant-delta" type="number" step={1} required value={delta} onInput={(e) => setDelta(e.currentTarget.value)} />
            </label>
            <label>
              Reason
              <input value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
            </label>
            <button type="submit">Apply</button>
          </form>
          <form
            class="form"
            onSubmit={(e) => {
              e.preventDefault();
              void run(async () => {
                await api(path, {
                  method: 'PATCH',
                  json: { rate_limit_rpm: limitOf(rpm), max_concurrent_tasks: limitOf(concurrent), max_text_in_flight: limitOf(textInFlight) },
                });
                return 'Limits saved.';
              });
            }}
          >
            <h3>Limits (empty: none)</h3>
            <label>
              Requests / min
              <input id="limit-rpm" type="number" min={1} step={1} value={rpm} onInput={(e) => setRpm(e.currentTarget.value)} />
            </label>
            <label>
              Concurrent tasks (videos, background responses)
              <input id="limit-concurrent" type="number" min={1} step={1} value={concurrent} onInput={(e) => setConcurrent(e.currentTarget.value)} />
            </label>
            <label>
              Text requests in flight
              <input type="number" min={1} step={1} value={textInFlight} onInput={(e) => setTextInFlight(e.currentTarget.value)} />
            </label>
            <button type="submit">Save limits</button>
          </form>
          <div class="form danger-zone">
            <h3>Revoke</h3>
            <p class="muted">The key is refused at once, everywhere.</p>
            {confirmRevoke ? (
              <div class="actions">
                <button type="button" class="danger" onClick={() => void run(async () => (await api(path, { method: 'DELETE' }), 'Key revoked.'))}>
                  Confirm revoke
                </button>
                <button type="button" onClick={() => setConfirmRevoke(false)}>
                  Cancel
                </button>
              </div>
            ) : (
              <button type="button" class="danger" onClick={() => setConfirmRevoke(true)}>
                Revoke key
              </button>
            )}
          </div>
        </div>
      ) : null}
      {!k.revoked_at ? <KeyWebhook keyId={k.id} /> : null}
      <h3>Ledger</h3>
      <LedgerTable endpoint={`${path}/ledger`} idPrefix="key-ledger" />
    </section>
  );
}

export function AdminKeys() {
  // Revoked keys stay listed (marked), so a key revoked here keeps its panel and its history.
  const keys = useLoad((signal) => api<List<AdminKey>>('/admin/keys?include_revoked=true', { signal }), [], 10_000);
  const [selected, setSelected] = useState<string | null>(null);
  const current = keys.data?.data.find((k) => k.id === selected);

  return (
    <Page title="Keys">
      <CreateKey onCreated={keys.reload} />
      <ErrorNote error={keys.error} />
      {keys.data ? (
        <div class="table-wrap">
          <table class="keys">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Id</th>
                <th scope="col">Hint</th>
                <th scope="col" class="num">
                  Balance
                </th>
                <th scope="col" class="num">
                  Spent
                </th>
                <th scope="col">Limits</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.data.data.map((k) => (
                <tr key={k.id} data-key-id={k.id} class={k.revoked_at ? 'revoked' : undefined}>
                  <td>
                    {k.name}
                    {k.revoked_at ? <span class="badge badge-failed">revoked</span> : null}
                  </td>
                  <td class="mono">{k.id}</td>
                  <td class="mono">{k.key_hint}</td>
                  <td class="num">{k.unlimited ? 'unlimited' : k.balance === undefined || k.balance === null ? '' : credits(k.balance)}</td>
                  <td class="num">{credits(k.spent ?? 0)}</td>
                  <td>
                    {k.rate_limit_rpm ? `${k.rate_limit_rpm}/min` : 'no rpm'}, {k.max_concurrent_tasks ? `${k.max_concurrent_tasks} tasks` : 'no task cap'}
                  </td>
                  <td>{dateTime(k.created_at)}</td>
                  <td>
                    <button type="button" aria-pressed={selected === k.id} onClick={() => setSelected(selected === k.id ? null : k.id)}>
                      Manage<span class="visually-hidden"> {k.name}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {current ? <KeyPanel key={current.id} k={current} onChange={keys.reload} /> : null}
    </Page>
  );
}
