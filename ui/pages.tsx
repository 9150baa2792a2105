/**
 * Every page of the dashboard, in one table: its path (parameters as `:name`), its title, whether and
 * where it shows in the navigation, and the component that renders it. Adding a page is adding an entry
 * here (ui/README.md, "Adding a page").
 */
import type { JSX } from 'preact';
import { lazyPage } from './components/lazy-page.tsx';
import { GatewaysPage } from './pages/gateways.tsx';
import { RunsPage } from './pages/runs/list.tsx';
import { RunPage } from './pages/runs/run.tsx';
import { SchedulesPage } from './pages/schedules/list.tsx';
import { SettingsPage } from './pages/settings.tsx';
import { ToolStatePage } from './pages/tools/state.tsx';

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

/** A Tools page: their forms and editor are a chunk of their own, fetched with the first of them. */
const toolsPage = (name: keyof typeof import('./pages/tools/pages.ts')) =>
  lazyPage(() => import('./pages/tools/pages.ts').then((pages) => pages[name]));

/** A Systems page: their forms, protocol table and connection test are a chunk of their own, as the Tools pages'. */
const systemsPage = (name: keyof typeof import('./pages/systems/pages.ts')) =>
  lazyPage(() => import('./pages/systems/pages.ts').then((pages) => pages[name]));

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
  { path: '/tools', title: () => 'Tools', nav: 'Tools', component: toolsPage('ToolsPage') },
  { path: '/tools/:toolId', title: (params) => `Tool ${params.toolId}`, component: toolsPage('ToolPage') },
  {
    path: '/tools/:toolId/edit',
    title: (params) => `Edit ${params.toolId}`,
    component: toolsPage('EditToolPage'),
  },
  // Not under /tools/: any name there could be a tool's id.
  { path: '/new/tool', title: () => 'New tool', component: toolsPage('NewToolPage') },
  { path: '/systems', title: () => 'Systems', nav: 'Systems', component: systemsPage('SystemsPage') },
  // Before /systems/:systemId, which would match it too (a system named "new" is reached by its list row).
  { path: '/systems/new', title: () => 'New system', component: systemsPage('SystemFormPage') },
  {
    path: '/systems/:systemId',
    title: (params) => `System ${params.systemId}`,
    component: systemsPage('SystemPage'),
  },
  {
    path: '/systems/:systemId/edit',
    title: (params) => `Edit system ${params.systemId}`,
    component: systemsPage('SystemFormPage'),
  },
  { path: '/schedules', title: () => 'Schedules', nav: 'Schedules', component: SchedulesPage },
  { path: '/gateways', title: () => 'Gateways', nav: 'Gateways', component: GatewaysPage },
  { path: '/tools/:toolId/state', title: (params) => `State of ${params.toolId}`, component: ToolStatePage },
  { path: '/settings', title: () => 'Settings', nav: 'Settings', component: SettingsPage },
];

/** Where `/` goes. */
export const HOME = '/runs';
