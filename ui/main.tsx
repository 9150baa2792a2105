/**
 * ui/: the dashboard, a Preact single-page app built by `npm run build` (ui/build.ts, esbuild) into
 * dist/ui/ and served by the API role at `/` (api/dashboard.ts). It talks only to the public /v1 API with
 * the signed-in key (api/client.ts); shapes come from contract/api as TypeScript types only. Pages are
 * listed in pages.tsx; ui/README.md says how to add one.
 *
 * May import: contract.
 */
import { render } from 'preact';
import './styles.css';
import { restoreSession } from './session.ts';
import { App } from './shell/app.tsx';

const root = document.getElementById('app');
if (root) {
  // Before the first render, so a reload shows "Signing in…" rather than the sign-in form.
  void restoreSession();
  render(<App />, root);
}
