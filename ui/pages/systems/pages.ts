/** The Systems pages, fetched together the first time one of them is shown (pages.tsx, lazyPage). */
export { SystemFormPage } from './form.tsx';
export { SystemsPage } from './list.tsx';
export { SystemPage } from './system.tsx';
