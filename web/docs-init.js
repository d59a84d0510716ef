/* web/docs-init.js - GET /docs/init.js: starts Swagger UI on this
 * daemon's /openapi.yaml.  The document names its server as "/", so "Try
 * it out" goes to whatever address and port served this page.  No request
 * leaves this origin: validatorUrl is null (else the spec URL goes to
 * validator.swagger.io).  With --api-key-file the document itself needs a
 * key: the page asks for it and sends it (Authorization: Bearer) with the
 * document's fetch and every "Try it out" request. */
'use strict';

(function () {
  let key = '';
  const $ = (id) => document.getElementById(id);

  function start() {
    window.ui = SwaggerUIBundle({
      url: '/openapi.yaml',
      dom_id: '#swagger-ui',
      deepLinking: true,
      validatorUrl: null,
      presets: [SwaggerUIBundle.presets.apis],
      layout: 'BaseLayout',
      requestInterceptor: (req) => {
        if (key && !req.headers.Authorization) req.headers.Authorization = 'Bearer ' + key;
        return req;
      },
    });
  }

  async function probe() {
    const res = await fetch('/openapi.yaml', {
      method: 'HEAD',
      headers: key ? { Authorization: 'Bearer ' + key } : {},
    });
    if (res.status === 401) {
      $('rd-key').hidden = false;
      $('rd-key-status').textContent = key ? 'that key was not accepted' : '';
      return;
    }
    $('rd-key').hidden = true;
    start();
  }

  $('rd-key-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    key = $('rd-key-input').value.trim();
    probe();
  });
  probe().catch(() => start());
})();
