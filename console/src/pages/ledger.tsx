/** The key holder's ledger: every grant, charge, refund and usage entry, filterable. */
import { LedgerTable } from '../components/ledger-table';
import { Page } from '../components/ui';

export function Ledger() {
  return (
    <Page title="Ledger">
      <LedgerTable endpoint="/v1/billing/ledger" idPrefix="ledger" />
    </Page>
  );
}
