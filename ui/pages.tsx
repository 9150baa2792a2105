/**
 * Every page of the dashboard, in one table: its path (parameters as `:name`), its title, whether and
 * where it shows in the navigation, and the component that renders it. Adding a page is adding an entry
 * here (ui/README.md, "Adding a page").
 */
import type { JSX } from 'preact';
import { lazyPage } from './components/lazy-page.tsx';
import { notBuiltPage } from './components/not-built.tsx';
import { RunsPage } from './pages/runs/list.tsx';
import { RunPage } from './pages/runs/run.tsx';
import { SettingsPage } from './pages/settings.tsx';

export interface PageProps {
  /** The path's parameters, decoded: `/runs/:runId` gives `{ runId }`. */
  params: Record<string, string>;
}

export interface PageDefinition {
  path: string;
  /** The document title (`… · kubeglue`). */
  title: (params: Record<string, string>) => string;
  /** The navigation's label; pages without one (a run) are reached by links. */
  nav?: string;
  component: (props: PageProps) => JSX.Element | null;
}

export const PAGES: readonly PageDefinition[] = [
  {
    path: '/overview',
    title: () => 'Overview',
    nav: 'Overview',
    // A chunk of its own: its charts load with it, not with the dashboard.
    component: lazyPage(() => import('./pages/overview/overview.tsx').then((page) => page.OverviewPage)),
  },
  { path: '/runs', title: () => 'Runs', nav: 'Runs', component: RunsPage },
  { path: '/runs/:runId', title: (params) => `Run ${params.runId}`, component: RunPage },
  {
    path: '/tools',
    title: () => 'Tools',
    nav: 'Tools',
    component: notBuiltPage('Tools', 'The tools, their definitions and a run form', 'GET /v1/tools'),
  },
  {
    path: '/systems',
    title: () => 'Systems',
    nav: 'Systems',
    component: notBuiltPage(
      'Systems',
      'The systems with their credentials state, OAuth and documentation',
      'GET /v1/systems',
    ),
  },
  {
    path: '/schedules',
    title: () => 'Schedules',
    nav: 'Schedules',
    component: notBuiltPage(
      'Schedules',
      'The schedules of tools and their next run times',
      'GET /v1/tools/{toolId}/schedules',
    ),
  },
  {
    path: '/gateways',
    title: () => 'Gateways',
    nav: 'Gateways',
    component: notBuiltPage(
      'Gateways',
      'The connected gateway tunnels and their targets',
      'GET /v1/gateways',
    ),
  },
  { path: '/settings', title: () => 'Settings', nav: 'Settings', component: SettingsPage },
];

/** Where `/` goes. */
export const HOME = '/runs';
