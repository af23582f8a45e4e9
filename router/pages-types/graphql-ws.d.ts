// Types of ./graphql-ws.js as the pages import it: graphql-ws's browser client, served from
// node_modules by router/pages.ts (tsconfig.pages.json `rootDirs` puts this file beside the pages).
export * from "graphql-ws/client";
