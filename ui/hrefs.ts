/**
 * The dashboard's addresses of a run, a tool and a system (the paths of pages.tsx), the id encoded: one
 * function each, so that every link to one of them is written once. A module without imports: the pages
 * of every chunk use it.
 */

export const runHref = (runId: string) => `/runs/${encodeURIComponent(runId)}`;

export const toolHref = (toolId: string) => `/tools/${encodeURIComponent(toolId)}`;

export const systemHref = (systemId: string) => `/systems/${encodeURIComponent(systemId)}`;
