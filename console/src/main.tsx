import { render } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { Api } from './api.js';
import { CampaignPage, CampaignsPage, NewCampaignPage } from './pages/campaigns.js';
import { CredentialsPage } from './pages/credentials.js';
import { MessagesPage } from './pages/messages.js';
import { SignIn } from './pages/sign-in.js';
import { TriggerPage } from './pages/trigger.js';
import { UserPage, UsersPage } from './pages/users.js';
import { match, navigate, useLocation } from './router.js';
import { clearSession, loadSession, type Session } from './session.js';
import { Link } from './ui.js';

const NAV = [
  { to: '/users', label: 'Users' },
  { to: '/campaigns', label: 'Campaigns' },
  { to: '/messages', label: 'Messages' },
  { to: '/credentials', label: 'Push credentials' },
];

function route(path: string, api: Api) {
  let p: Record<string, string> | null;
  if (path === '/' || path === '/users') return <UsersPage api={api} />;
  if ((p = match('/users/:id', path))) return <UserPage api={api} id={p.id!} />;
  if (path === '/campaigns') return <CampaignsPage api={api} />;
  if (path === '/campaigns/new') return <NewCampaignPage api={api} />;
  if ((p = match('/campaigns/:id', path))) return <CampaignPage api={api} id={p.id!} />;
  if ((p = match('/campaigns/:id/triggers/:trigger', path)))
    return <TriggerPage api={api} campaignId={p.id!} triggerId={p.trigger!} />;
  if (path === '/messages') return <MessagesPage api={api} />;
  if (path === '/credentials') return <CredentialsPage api={api} />;
  return (
    <section>
      <h1 tabIndex={-1}>Not found</h1>
      <p>
        No console page at this address. <Link to="/users">Go to users</Link>.
      </p>
    </section>
  );
}

function App() {
  const [session, setSession] = useState<Session | null>(loadSession);
  const { path } = useLocation();
  const api = useMemo(() => (session ? new Api(session) : null), [session]);
  const main = useRef<HTMLElement>(null);

  // On each page change, focus moves to the page's heading so screen readers announce it.
  useEffect(() => {
    const heading = main.current?.querySelector<HTMLElement>('h1');
    if (heading && document.activeElement !== heading && path !== '/') heading.focus();
    document.title = `${heading?.textContent ?? 'Console'} · Herald`;
  }, [path, session]);

  if (!session || !api) return <SignIn onSignedIn={(s) => setSession(s)} />;

  const signOut = () => {
    clearSession();
    setSession(null);
    navigate('/', true);
  };
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Herald console</span>
        <nav aria-label="Main">
          <ul>
            {NAV.map((item) => (
              <li key={item.to}>
                <Link
                  to={item.to}
                  current={path === item.to || path.startsWith(`${item.to}/`) || (item.to === '/users' && path === '/')}
                >
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <span class="project" title="Signed-in project">
          {session.projectId}
        </span>
        <button type="button" class="secondary" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="main" ref={main}>
        {route(path, api)}
      </main>
    </>
  );
}

const root = document.getElementById('app')!;
// The server-rendered "Loading…" placeholder goes; Preact renders into an empty container.
root.replaceChildren();
render(<App />, root);
