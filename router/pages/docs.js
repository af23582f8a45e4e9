// @ts-check
// The API reference at /docs (router/devtools/pages.ts): Swagger UI over the OpenAPI document the
// page names, from this origin only (no validator badge, which would call swagger.io).
(() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: loaded as a classic script (<script defer src>), not a module
  "use strict";
  var root = /** @type {HTMLElement} */ (document.getElementById("reference"));
  window.SwaggerUIBundle({
    domNode: root,
    url: root.dataset.url,
    deepLinking: true,
    validatorUrl: null,
    docExpansion: "list",
    defaultModelsExpandDepth: 0,
    displayRequestDuration: true,
    presets: [window.SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    onComplete: () => {
      root.dataset.ready = "";
    },
  });
})();
