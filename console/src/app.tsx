/**
 * The shell: restores the session (GET /console/api/session, which also hands back the CSRF
 * token after a reload), the navigation for the session's role (collapsing behind a Menu
 * button on narrow screens), the theme toggle and sign-out, and the page for the path.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, send, setCsrfToken, type Session } from './api';
import { ErrorNote, Link, Page } from './components/ui';
import { useLoad } from './hooks';
import { AdminKeys } from './pages/admin-keys';
import { AdminAudit, AdminChannels, AdminTasks } from './pages/admin-other';
import { Characters } from './pages/characters';
import { CreateVideo } from './pages/create-video';
import { Ledger } from './pages/ledger';
import { Overview } from './pages/overview';
import { Playground } from './pages/playground';
import { SignIn } from './pages/sign-in';
import { TaskPage, Tasks } from './pages/tasks';
import { BASE, navigate, usePath } from './router';
import { nextTheme, themeLabel, type Theme } from './theme';

const KEY_NAV = [
  { href: BASE, label: 'Overview' },
  { href: `${BASE}/tasks`, label: 'Tasks' },
  { href: `${BASE}/create`, label: 'New video' },
  { href: `${BASE}/playground`, label: 'Playground' },
  { href: `${BASE}/ledger`, label: 'Ledger' },
  { href: `${BASE}/characters`, label: 'Characters' },
];

const ADMIN_NAV = [
  { href: `${BASE}/admin/keys`, label: 'Keys' },
  { href: `${BASE}/admin/channels`, label: 'Channels' },
  { href: `${BASE}/admin/tasks`, label: 'All tasks' },
  { href: `${BASE}/admin/audit`, label: 'Audit' },
];

/** What a key session sees on an operator's page: the refusal, and the API's own answer. */
function AdminRefused() {
  const probe = useLoad((signal) => api<unknown>('/admin/keys', { signal }), []);
  return (
    <Page title="Operators only">
      <p class="error" role="alert" id="admin-refused">
        This page needs an operator session (signed in with the admin token). A key session cannot use the admin API.
      </p>
      {probe.error ? <ErrorNote error={probe.error} /> : null}
    </Page>
  );
}

function route(path: string, session: Session) {
  const p = path.replace(/\/+$/, '') || BASE;
  if (p.startsWith(`${BASE}/admin`)) {
    if (session.role !== 'admin') return <AdminRefused />;
    if (p === `${BASE}/admin` || p === `${BASE}/admin/keys`) return <AdminKeys />;
    if (p === `${BASE}/admin/channels`) return <AdminChannels />;
    if (p === `${BASE}/admin/tasks`) return <AdminTasks />;
    if (p === `${BASE}/admin/audit`) return <AdminAudit />;
    return <NotFound />;
  }
  if (session.role === 'admin') {
    return (
      <Page title="Key holders' pages">
        <p>You are signed in as the operator, who has no key: the key holders' pages need a key session.</p>
        <p>
          <Link href={`${BASE}/admin/keys`}>Go to the keys</Link>
        </p>
      </Page>
    );
  }
  if (p === BASE) return <Overview />;
  if (p === `${BASE}/tasks`) return <Tasks />;
  const task = /^\/console\/tasks\/([^/]+)$/.exec(p);
  if (task?.[1]) return <TaskPage id={decodeURIComponent(task[1])} />;
  if (p === `${BASE}/create`) return <CreateVideo />;
  if (p === `${BASE}/playground`) return <Playground />;
  if (p === `${BASE}/ledger`) return <Ledger />;
  if (p === `${BASE}/characters`) return <Characters />;
  return <NotFound />;
}

function NotFound() {
  return (
    <Page title="Not found">
      <p>No console page has this address.</p>
    </Page>
  );
}

export function App({ theme, onTheme }: { theme: Theme; onTheme: (t: Theme) => void }) {
  const path = usePath();
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [menuOpen, setMenuOpen] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);

  useEffect(() => {
    api<Session>('/console/api/session')
      .then((s) => {
        setCsrfToken(s.csrf_token);
        setSession(s);
      })
      .catch((err: unknown) => {
        if (!(err instanceof ApiError && err.status === 401)) setError(err instanceof Error ? err : new Error(String(err)));
        setSession(null);
      });
  }, []);

  useEffect(() => setMenuOpen(false), [path]);

  const signOut = async () => {
    const res = await send('/console/api/session', { method: 'DELETE' });
    if (!res.ok && res.status !== 401) {
      setError(new ApiError(res.status, `Sign-out failed (${res.status}).`, null));
      return;
    }
    setCsrfToken(null);
    setSession(null);
    navigate(BASE, true);
  };

  const themeButton = (
    <button type="button" class="theme-toggle" onClick={() => onTheme(nextTheme(theme))} aria-label={`Theme: ${themeLabel(theme)}. Change theme`}>
      {themeLabel(theme)}
    </button>
  );

  if (session === undefined) return <p class="loading">Loading…</p>;
  if (session === null) {
    return (
      <div class="shell shell-signed-out">
        <div class="top-right">{themeButton}</div>
        <ErrorNote error={error} />
        <SignIn
          onSignedIn={(s) => {
            setSession(s);
            const wantsAdmin = location.pathname.startsWith(`${BASE}/admin`);
            if (s.role === 'admin' && !wantsAdmin) navigate(`${BASE}/admin/keys`, true);
            else if (s.role === 'key' && location.pathname === `${BASE}/`) navigate(BASE, true);
          }}
        />
      </div>
    );
  }

  const nav = session.role === 'admin' ? ADMIN_NAV : KEY_NAV;
  const current = path.replace(/\/+$/, '') || BASE;
  return (
    <div class={`shell${menuOpen ? ' menu-open' : ''}`}>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <span class="brand">Gateway console</span>
        <button type="button" class="menu-button" aria-expanded={menuOpen} aria-controls="nav" onClick={() => setMenuOpen(!menuOpen)}>
          Menu
        </button>
        <nav id="nav" aria-label="Console">
          <ul>
            {nav.map((item) => (
              <li key={item.href}>
                <Link href={item.href} current={current === item.href || (item.href !== BASE && current.startsWith(`${item.href}/`))}>
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
          <div class="session">
            <span class="who">{session.role === 'admin' ? 'operator' : `${session.key?.name ?? ''} (${session.key?.key_hint ?? ''})`}</span>
            {themeButton}
            <button type="button" id="sign-out" onClick={() => void signOut()}>
              Sign out
            </button>
          </div>
        </nav>
      </header>
      <main id="main" tabIndex={-1}>
        <ErrorNote error={error} />
        {route(path, session)}
      </main>
    </div>
  );
}
