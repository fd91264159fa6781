/**
 * PGlite publishes its Node filesystem as the subpath `@electric-sql/pglite/nodefs` (package
 * exports), which this project's `moduleResolution: node` cannot see; its types are these.
 */
declare module '@electric-sql/pglite/nodefs' {
  export { NodeFS } from '@electric-sql/pglite/dist/fs/nodefs';
}
