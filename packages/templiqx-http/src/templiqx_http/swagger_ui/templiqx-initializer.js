// The API docs page of templiqx-http: Swagger UI over this server's own OpenAPI document.
// Everything is served from this folder (no CDN, no validator service): the page works with
// the network unplugged. The document's address is relative to the page, so the docs keep
// working when a host mounts the app under a prefix.
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: new URL("../operations/v1/openapi.json", window.location.href).toString(),
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
