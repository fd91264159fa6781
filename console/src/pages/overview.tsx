/** The key holder's home: balance, spend per day or hour (by model), and text usage. */
import { useState } from 'preact/hooks';
import { api, query } from '../api';
import { ModelBars, SpendChart } from '../components/spend-chart';
import { Card, ErrorNote, Page } from '../components/ui';
import { credits, dateTime, dollars } from '../format';
import { useLoad } from '../hooks';
import type { Billing, Spend, Usage } from '../types';

export function Overview() {
  const [granularity, setGranularity] = useState<'day' | 'hour'>('day');
  const billing = useLoad((signal) => api<Billing>('/v1/billing', { signal }), [], 10_000);
  const spend = useLoad((signal) => api<Spend>(`/v1/billing/spend${query({ granularity })}`, { signal }), [granularity], 10_000);
  const usage = useLoad((signal) => api<Usage>('/v1/billing/usage?limit=20', { signal }), [], 10_000);
  const b = billing.data;

  return (
    <Page title="Overview">
      <ErrorNote error={billing.error} />
      {b ? (
        <div class="cards">
          <Card title="Balance" value={credits(b.balance)} note={b.balance === null ? 'no quota' : dollars(b.balance)} />
          <Card title="Spent" value={credits(b.spent)} note={dollars(b.spent)} />
          <Card title="Held by text requests" value={credits(b.held)} />
          <Card title="Tasks in flight" value={`${b.tasks_in_flight}${b.max_concurrent_tasks ? ` / ${b.max_concurrent_tasks}` : ''}`} />
          <Card title="Rate limit" value={b.rate_limit_rpm ? `${b.rate_limit_rpm} / min` : 'none'} />
        </div>
      ) : null}

      <section aria-labelledby="spend-title" class="panel">
        <div class="panel-header">
          <h2 id="spend-title">Spend</h2>
          <div class="segmented" role="group" aria-label="Granularity">
            {(['day', 'hour'] as const).map((g) => (
              <button type="button" key={g} aria-pressed={granularity === g} onClick={() => setGranularity(g)}>
                per {g}
              </button>
            ))}
          </div>
        </div>
        <ErrorNote error={spend.error} />
        {spend.data ? (
          <>
            <p class="muted">
              {dateTime(spend.data.since)} to {dateTime(spend.data.until)}, credits (1,000,000 = $1)
            </p>
            <SpendChart buckets={spend.data.data} granularity={spend.data.granularity} since={spend.data.since} until={spend.data.until} />
            <h3>By model</h3>
            <ModelBars buckets={spend.data.data} />
          </>
        ) : null}
      </section>

      <section aria-labelledby="usage-title" class="panel">
        <h2 id="usage-title">Text usage</h2>
        <ErrorNote error={usage.error} />
        {usage.data && usage.data.totals.length === 0 ? <p class="muted">No text requests yet.</p> : null}
        {usage.data && usage.data.totals.length > 0 ? (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Model</th>
                  <th scope="col" class="num">
                    Requests
                  </th>
                  <th scope="col" class="num">
                    Input tokens
                  </th>
                  <th scope="col" class="num">
                    Output tokens
                  </th>
                  <th scope="col" class="num">
                    Cache write
                  </th>
                  <th scope="col" class="num">
                    Cache read
                  </th>
                </tr>
              </thead>
              <tbody>
                {usage.data.totals.map((t) => (
                  <tr key={t.model}>
                    <td>{t.model}</td>
                    <td class="num">{t.requests}</td>
                    <td class="num">{t.input_tokens}</td>
                    <td class="num">{t.output_tokens}</td>
                    <td class="num">{t.cache_creation_tokens}</td>
                    <td class="num">{t.cache_read_tokens}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
      </section>
    </Page>
  );
}
