/**
 * A ledger with its filters (kind, model, since/until), newest first, paged by offset. The key
 * holder's page reads /v1/billing/ledger, the operator's key panel /admin/keys/{id}/ledger.
 */
import { useState } from 'preact/hooks';
import { api, query } from '../api';
import { credits, dateTime, dayToUnix } from '../format';
import { useLoad } from '../hooks';
import type { LedgerEntry, List } from '../types';
import { ErrorNote } from './ui';

const PAGE = 50;

interface Filters {
  kind: string;
  model: string;
  since: string;
  until: string;
}

export function LedgerTable({ endpoint, idPrefix }: { endpoint: string; idPrefix: string }) {
  const [draft, setDraft] = useState<Filters>({ kind: '', model: '', since: '', until: '' });
  const [filters, setFilters] = useState<Filters>(draft);
  const [offset, setOffset] = useState(0);
  const ledger = useLoad(
    (signal) =>
      api<List<LedgerEntry>>(
        endpoint +
          query({
            limit: PAGE,
            offset,
            kind: filters.kind,
            model: filters.model,
            since: dayToUnix(filters.since),
            until: dayToUnix(filters.until, true),
          }),
        { signal },
      ),
    [endpoint, filters, offset],
  );
  const field = (name: keyof Filters) => (e: Event) => setDraft({ ...draft, [name]: (e.currentTarget as HTMLInputElement).value });

  return (
    <div>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setOffset(0);
          setFilters(draft);
        }}
      >
        <label>
          Kind
          <select id={`${idPrefix}-kind`} value={draft.kind} onChange={field('kind')}>
            <option value="">all</option>
            <option value="grant">grant</option>
            <option value="charge">charge</option>
            <option value="refund">refund</option>
            <option value="usage">usage</option>
          </select>
        </label>
        <label>
          Model
          <input id={`${idPrefix}-model`} value={draft.model} onInput={field('model')} placeholder="any" />
        </label>
        <label>
          Since
          <input type="date" value={draft.since} onInput={field('since')} />
        </label>
        <label>
          Until
          <input type="date" value={draft.until} onInput={field('until')} />
        </label>
        <button type="submit">Filter</button>
      </form>
      <ErrorNote error={ledger.error} />
      {ledger.data ? (
        <>
          <div class="table-wrap">
            <table class="ledger">
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Model</th>
                  <th scope="col" class="num">
                    Credits
                  </th>
                  <th scope="col">Reference</th>
                  <th scope="col">Reason</th>
                </tr>
              </thead>
              <tbody>
                {ledger.data.data.length === 0 ? (
                  <tr>
                    <td colSpan={6} class="muted">
                      No entries.
                    </td>
                  </tr>
                ) : null}
                {ledger.data.data.map((e) => (
                  <tr key={e.id} data-kind={e.kind}>
                    <td>{dateTime(e.created_at)}</td>
                    <td>
                      <span class={`badge badge-${e.kind}`}>{e.kind}</span>
                    </td>
                    <td>{e.model ?? ''}</td>
                    <td class={`num ${e.amount < 0 ? 'negative' : 'positive'}`}>{credits(e.amount)}</td>
                    <td class="mono">{e.ref}</td>
                    <td>{e.reason}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div class="pager">
            <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
              Newer
            </button>
            <button type="button" disabled={!ledger.data.has_more} onClick={() => setOffset(offset + PAGE)}>
              Older
            </button>
          </div>
        </>
      ) : null}
    </div>
  );
}
