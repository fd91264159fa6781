/** The admin and key views of money, for the billing e2e tests. */
import { call } from './client';
import { ADMIN_TOKEN } from './stack';

export interface LedgerEntry {
  id: number;
  kind: 'grant' | 'charge' | 'refund' | 'usage';
  amount: number;
  ref: string;
  reason: string;
  model: string | null;
}

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

export async function balanceOf(base: string, keyId: string): Promise<number | null> {
  const res = await call<{ balance: number | null }>(`${base}/admin/keys/${keyId}`, { headers: admin });
  if (res.status !== 200) throw new Error(`GET /admin/keys/${keyId}: HTTP ${res.status}`);
  return res.body.balance;
}

export async function ledgerOf(base: string, keyId: string): Promise<LedgerEntry[]> {
  const res = await call<{ data: LedgerEntry[] }>(`${base}/admin/keys/${keyId}/ledger?limit=1000`, { headers: admin });
  if (res.status !== 200) throw new Error(`ledger: HTTP ${res.status}`);
  return res.body.data;
}

/** The ledger entries of one task, as "kind:amount", sorted. */
export async function taskEntries(base: string, keyId: string, taskId: string): Promise<string[]> {
  return (await ledgerOf(base, keyId))
    .filter((e) => e.ref === taskId)
    .map((e) => `${e.kind}:${e.amount}`)
    .sort();
}

export async function auditMismatches(base: string): Promise<unknown[]> {
  const res = await call<{ mismatches: unknown[] }>(`${base}/admin/audit`, { headers: admin });
  if (res.status !== 200) throw new Error(`audit: HTTP ${res.status}`);
  return res.body.mismatches;
}
