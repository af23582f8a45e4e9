// @ts-check
// Starts Switchyard's GraphiQL (router/devtools/graphiql.ts) without inline script: the options
// come from a JSON data block, and Monaco's editor workers are files of this same origin (the
// CSP's worker-src 'self'), beside this script under /assets/<version>/.
(() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: loaded as a classic script (<script defer src>), not a module
  "use strict";
  var base = new URL(".", /** @type {HTMLScriptElement} */ (document.currentScript).src).href;
  /** @type {Record<string, string>} */
  var workers = {
    editorWorkerService: `${base}graphiql-editor.worker.js`,
    json: `${base}graphiql-json.worker.js`,
    graphql: `${base}graphiql-graphql.worker.js`,
  };
  self.MonacoEnvironment = {
    globalAPI: false,
    getWorkerUrl: (_moduleId, label) => workers[label] || workers.editorWorkerService,
  };
  var options = JSON.parse(/** @type {HTMLElement} */ (document.getElementById("graphiql-options")).textContent ?? "");
  window.YogaGraphiQL.renderYogaGraphiQL(document.getElementById("root"), options);
})();
