/**
 * Sign in with an API key or the admin token. The secret goes once, in a JSON POST body, to
 * /console/api/session; it is never put in a URL or in web storage, and the form field is
 * cleared once the answer is in. The session itself is an HttpOnly cookie the page cannot read.
 */
import { useState } from 'preact/hooks';
import { api, setCsrfToken, type Session } from '../api';
import { ErrorNote } from '../components/ui';

export function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [as, setAs] = useState<'key' | 'admin'>('key');
  const [secret, setSecret] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const session = await api<Session>('/console/api/session', { json: as === 'key' ? { api_key: secret } : { admin_token: secret } });
      setSecret('');
      setCsrfToken(session.csrf_token);
      onSignedIn(session);
    } catch (err) {
      setError(err instanceof Error ? err : new Error(String(err)));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" class="sign-in">
      <h1>Gateway console</h1>
      <form class="form" onSubmit={submit}>
        <fieldset class="segmented-field">
          <legend>Sign in as</legend>
          <label class="check">
            <input type="radio" name="as" value="key" checked={as === 'key'} onChange={() => setAs('key')} /> Key holder (API key)
          </label>
          <label class="check">
            <input type="radio" name="as" value="admin" checked={as === 'admin'} onChange={() => setAs('admin')} /> Operator (admin token)
          </label>
        </fieldset>
        <label>
          {as === 'key' ? 'API key' : 'Admin token'}
          <input id="secret" type="password" required autocomplete="off" value={secret} onInput={(e) => setSecret(e.currentTarget.value)} />
        </label>
        <ErrorNote error={error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Sign in
          </button>
        </div>
      </form>
    </main>
  );
}
