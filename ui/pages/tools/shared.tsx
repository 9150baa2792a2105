/** What the Tools pages share: a tool's definition as edited, reading it, its state. */

import { useEffect, useState } from 'preact/hooks';
import * as routes from '../../../contract/api/route-paths.ts';
import type { Tool } from '../../api/types.ts';
import { ErrorMessage } from '../../components/error-message.tsx';
import { Badge } from '../../components/status.tsx';
import { Link } from '../../router.tsx';
import { client } from '../../session.ts';

/** The definition as it is edited and copied: the tool without what the server sets. */
export function definitionOf(tool: Tool): Omit<Tool, 'createdAt' | 'updatedAt'> {
  const { createdAt: _created, updatedAt: _updated, ...definition } = tool;
  return definition;
}

/** The tool of a page (GET /v1/tools/{id}); `error` when it cannot be read. */
export function useTool(toolId: string) {
  const [tool, setTool] = useState<Tool>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    const abort = new AbortController();
    client()
      .call(routes.getTool, { params: { toolId }, signal: abort.signal })
      .then(setTool, (caught: unknown) => abort.signal.aborted || setError(caught));
    return () => abort.abort();
  }, [toolId]);
  return { tool, setTool, error };
}

/** A page whose tool cannot be read: missing, or one this key may not use (the API answers alike). */
export function ToolUnreadable({ title, error }: { title: string; error: unknown }) {
  return (
    <section>
      <h1>{title}</h1>
      <ErrorMessage error={error} title="The tool could not be read" />
      <p>
        <Link href="/tools">Back to the tools</Link>
      </p>
    </section>
  );
}

/** Active or archived: an icon and a word. */
export function ToolState({ archived }: { archived: boolean }) {
  return archived ? (
    <Badge icon="⊘" word="archived" tone="aborted" />
  ) : (
    <Badge icon="●" word="active" tone="success" />
  );
}
