/** The Tools pages, fetched together the first time one of them is shown (pages.tsx, lazyPage). */
export { EditToolPage, NewToolPage } from './edit.tsx';
export { ToolsPage } from './list.tsx';
export { ToolPage } from './tool.tsx';
