// What the dashboard's type check needs beside the DOM: the stylesheet import esbuild bundles, and the
// one Node module contract/api/system.ts imports for a server-side check (types only reach the bundle).
declare module '*.css';
declare module 'node:net' {
  export function isIP(input: string): number;
}
