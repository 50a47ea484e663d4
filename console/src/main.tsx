import { render } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { Api } from './api.js';
import { CampaignResultsPage } from './pages/campaign-results.js';
import { CampaignPage, CampaignsPage, NewCampaignPage } from './pages/campaigns.js';
import { CredentialsPage } from './pages/credentials.js';
import { EligibilityPage } from './pages/eligibility.js';
import { MessagesPage } from './pages/messages.js';
import { SettingsPage } from './pages/settings.js';
import { SignIn } from './pages/sign-in.js';
import { TriggerPage } from './pages/trigger.js';
import { UserPage } from './pages/user.js';
import { UsersPage } from './pages/users.js';
import { match, navigate, useLocation } from './router.js';
import { clearSession, loadSession, type Session } from './session.js';
import { Link, useLoad } from './ui.js';

const NAV = [
  { to: '/users', label: 'Users' },
  { to: '/campaigns', label: 'Campaigns' },
  { to: '/messages', label: 'Messages' },
  { to: '/credentials', label: 'Push credentials' },
  { to: '/settings', label: 'Settings' },
];

function route(path: string, api: Api) {
  let p: Record<string, string> | null;
  if (path === '/' || path === '/users') return <UsersPage api={api} />;
  if ((p = match('/users/:id', path))) return <UserPage api={api} id={p.id!} />;
  if (path === '/campaigns') return <CampaignsPage api={api} />;
  if (path === '/campaigns/new') return <NewCampaignPage api={api} />;
  if ((p = match('/campaigns/:id', path))) return <CampaignPage api={api} id={p.id!} />;
  if ((p = match('/campaigns/:id/results', path))) return <CampaignResultsPage api={api} campaignId={p.id!} />;
  if ((p = match('/campaigns/:id/eligibility', path))) return <EligibilityPage api={api} campaignId={p.id!} />;
  if ((p = match('/campaigns/:id/triggers/:trigger', path)))
    return <TriggerPage api={api} campaignId={p.id!} triggerId={p.trigger!} />;
  if (path === '/messages') return <MessagesPage api={api} />;
  if (path === '/credentials') return <CredentialsPage api={api} />;
  if (path === '/settings') return <SettingsPage api={api} />;
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

  const project = useLoad(
    (signal) =>
      api ? api.get<{ project_id: string; name: string }>('/api/v1/project', signal) : Promise.resolve(null),
    session?.projectId ?? '',
  );

  // On each page change, focus moves to the page's heading so screen readers announce it.
  useEffect(() => {
    const heading = main.current?.querySelector<HTMLElement>('h1');
    if (heading && document.activeElement !== heading && path !== '/') heading.focus();
  }, [path, session]);
  // The tab's title follows the heading, also when a page fills it in after loading (a campaign's name).
  useEffect(() => {
    const element = main.current;
    if (!element) return;
    const update = () =>
      (document.title = `${element.querySelector('h1')?.textContent ?? 'Console'} · ${project.data?.name ?? 'Herald'}`);
    update();
    const observer = new MutationObserver(update);
    observer.observe(element, { childList: true, subtree: true, characterData: true });
    return () => observer.disconnect();
  }, [session, project.data]);

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
        <span class="project" data-testid="project-name">
          <span class="sr-only">Project: </span>
          {project.data?.name ?? session.projectId}
          {project.data && <span class="project-id">{session.projectId}</span>}
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
