/* web/playground.js - the playground at GET / (see index.html).
 *
 * Everything the form offers comes from GET /v1/ops: the operators, each
 * operator's versions (opset ranges), whether a version takes "axes" (as an
 * attribute or an input: the same JSON field), one "axis" (ArgMax/ArgMin),
 * noop_with_empty_axes or select_last_index, and its dtypes.  A new
 * operator or version needs no change here.
 *
 * JSON data is sent as {"op", "opset", ..., "input": {"dtype", "data"}}; a
 * dropped .npy file is sent as its bytes (Content-Type: application/x-npy,
 * attributes in the query string, Accept: application/json).  With an API
 * key (asked for when the server answers 401) every request carries
 * Authorization: Bearer KEY.  Requests go to this page's own origin only.
 */
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  const state = { ops: [], key: '', npy: null, npyName: '' };
  const INT_DTYPES = /^(u?int(8|16|32|64))$/;

  function headers(extra) {
    const h = Object.assign({}, extra || {});
    if (state.key) h.Authorization = 'Bearer ' + state.key;
    return h;
  }

  function askKey(message) {
    $('key-box').hidden = false;
    $('key-status').textContent = message || '';
    $('key').focus();
  }

  /* ---- the operator list ------------------------------------------- */

  async function loadOps() {
    let res;
    try {
      res = await fetch('/v1/ops', { headers: headers() });
    } catch (e) {
      showError(0, 'NETWORK', 'cannot reach the server: ' + e.message);
      return false;
    }
    if (res.status === 401) {
      askKey(state.key ? 'that key was not accepted' : '');
      return false;
    }
    const body = await res.json();
    if (!res.ok) {
      showError(res.status, body.error && body.error.code, body.error && body.error.message);
      return false;
    }
    state.ops = body.ops;
    $('key-status').textContent = state.key ? 'key accepted' : '';
    fillOps();
    loadVersion();
    return true;
  }

  async function loadVersion() {
    try {
      const res = await fetch('/v2', { headers: headers() });
      if (res.ok) $('version').textContent = (await res.json()).version || '';
    } catch (e) { /* the footer only */ }
  }

  function option(select, value, text) {
    const o = document.createElement('option');
    o.value = String(value);
    o.textContent = text;
    select.appendChild(o);
  }

  function currentOp() {
    return state.ops.find((o) => o.op === $('op').value) || state.ops[0];
  }

  function currentVersion() {
    const op = currentOp();
    const opset = Number($('opset').value);
    return op.versions.find((v) => v.opsets[0] === opset) ||
      op.versions[op.versions.length - 1];
  }

  function fillOps() {
    const sel = $('op');
    const keep = sel.value;
    sel.textContent = '';
    for (const o of state.ops) option(sel, o.op, o.op);
    if (state.ops.some((o) => o.op === keep)) sel.value = keep;
    fillOpsets();
  }

  function fillOpsets() {
    const sel = $('opset');
    const op = currentOp();
    sel.textContent = '';
    for (const v of op.versions) {
      const [lo, hi] = v.opsets;
      const range = hi === null ? lo + ' and later' : lo === hi ? String(lo) : lo + '–' + hi;
      option(sel, lo, 'opset ' + range + ' (' + op.op + '-' + v.version + ')');
    }
    sel.value = String(op.versions[op.versions.length - 1].opsets[0]);
    fillVersion();
  }

  function showField(name, on) {
    for (const el of document.querySelectorAll('[data-for="' + name + '"]')) el.hidden = !on;
  }

  function fillVersion() {
    const v = currentVersion();
    const sel = $('dtype');
    const keep = sel.value || 'float32';
    sel.textContent = '';
    for (const d of v.dtypes) option(sel, d, d);
    sel.value = v.dtypes.includes(keep) ? keep : v.dtypes[0];
    const axesForm = v.axes || 'attribute';
    showField('axes', axesForm !== 'axis');
    showField('axis', axesForm === 'axis');
    $('axes-note').textContent = axesForm === 'input'
      ? 'an input in this version' : axesForm === 'attribute' ? 'an attribute in this version' : '';
    showField('noop', !!v.noop_with_empty_axes);
    showField('select-last', !!v.select_last_index);
    fillDtype();
  }

  function fillDtype() {
    showField('overflow', INT_DTYPES.test($('dtype').value));
  }

  /* ---- the request ------------------------------------------------- */

  function parseAxes(text) {
    const t = text.trim();
    if (t === '') return [];
    const list = t.replace(/^\[|\]$/g, '').split(/[\s,]+/).filter((s) => s !== '');
    return list.map((s) => {
      if (!/^-?\d+$/.test(s)) throw new Error("axes: '" + s + "' is not an integer");
      return Number(s);
    });
  }

  /* The attributes the chosen version has, as [name, value] pairs. */
  function attributes() {
    const v = currentVersion();
    const a = [['op', $('op').value], ['opset', Number($('opset').value)]];
    if ((v.axes || 'attribute') === 'axis') {
      a.push(['axis', Number($('axis').value || 0)]);
    } else {
      const axes = parseAxes($('axes').value);
      if (axes.length > 0) a.push(['axes', axes]);
    }
    a.push(['keepdims', $('keepdims').checked ? 1 : 0]);
    if (v.noop_with_empty_axes && $('noop').checked) a.push(['noop_with_empty_axes', 1]);
    if (v.select_last_index && $('select-last').checked) a.push(['select_last_index', 1]);
    if (INT_DTYPES.test($('dtype').value) && $('overflow').value) a.push(['overflow', $('overflow').value]);
    return a;
  }

  function shellQuote(s) {
    return "'" + s.replace(/'/g, "'\\''") + "'";
  }

  function curlCommand(url, ctype, body, file) {
    const parts = ['curl -sS -X POST ' + shellQuote(url)];
    if (state.key) parts.push('-H "Authorization: Bearer $REDUCED_API_KEY"');
    parts.push('-H ' + shellQuote('Content-Type: ' + ctype));
    if (file !== undefined) {
      parts.push('-H ' + shellQuote('Accept: application/json'));
      parts.push('--data-binary @' + shellQuote(file));
    } else {
      parts.push('-d ' + shellQuote(body));
    }
    return parts.join(' \\\n  ');
  }

  function buildRequest() {
    const attrs = attributes();
    const origin = window.location.origin;
    if (state.npy) {
      const q = attrs.map(([k, v]) =>
        encodeURIComponent(k) + '=' + encodeURIComponent(Array.isArray(v) ? v.join(',') : String(v)));
      const url = origin + '/v1/reduce?' + q.join('&');
      return {
        url, body: state.npy,
        headers: headers({ 'Content-Type': 'application/x-npy', Accept: 'application/json' }),
        curl: curlCommand(url, 'application/x-npy', null, state.npyName),
      };
    }
    let data;
    try {
      data = JSON.parse($('data').value);
    } catch (e) {
      throw new Error('data is not JSON: ' + e.message);
    }
    const req = {};
    for (const [k, v] of attrs) req[k] = v;
    req.input = { dtype: $('dtype').value, data };
    const body = JSON.stringify(req);
    const url = origin + '/v1/reduce';
    return {
      url, body,
      headers: headers({ 'Content-Type': 'application/json' }),
      curl: curlCommand(url, 'application/json', body),
    };
  }

  /* ---- the answer -------------------------------------------------- */

  function nest(flat, shape) {
    if (shape.length === 0) return flat[0];
    const step = shape.slice(1).reduce((a, b) => a * b, 1);
    const out = [];
    for (let i = 0; i < shape[0]; i++) out.push(nest(flat.slice(i * step, (i + 1) * step), shape.slice(1)));
    return out;
  }

  function pretty(x, depth) {
    if (!Array.isArray(x)) return JSON.stringify(x);
    if (x.every((e) => !Array.isArray(e))) return '[' + x.map((e) => JSON.stringify(e)).join(', ') + ']';
    const pad = ' '.repeat(depth + 1);
    return '[' + x.map((e, i) => (i ? pad : '') + pretty(e, depth + 1)).join(',\n') + ']';
  }

  function showError(status, code, message) {
    $('error').hidden = false;
    $('error-status').textContent = status ? String(status) : '';
    $('error-code').textContent = code || '';
    $('error-message').textContent = message || '';
  }

  function showResult(body) {
    const out = body.output;
    $('result').hidden = false;
    $('result-op').textContent = body.op + '-' + body.op_version + ' (opset ' + body.opset + ')';
    $('result-dtype').textContent = out.dtype;
    $('result-shape').textContent = JSON.stringify(out.shape);
    $('result-data').textContent = pretty(nest(out.data, out.shape), 0);
  }

  async function run(ev) {
    ev.preventDefault();
    $('error').hidden = true;
    $('result').hidden = true;
    let req;
    try {
      req = buildRequest();
    } catch (e) {
      showError(0, 'NOT_SENT', e.message);
      return;
    }
    $('request').hidden = false;
    $('curl').textContent = req.curl;
    $('copied').hidden = true;
    $('busy').hidden = false;
    try {
      const res = await fetch(req.url, { method: 'POST', headers: req.headers, body: req.body });
      const text = await res.text();
      let body;
      try {
        body = JSON.parse(text);
      } catch (e) {
        showError(res.status, 'NOT_JSON', text.slice(0, 500));
        return;
      }
      if (res.status === 401) askKey('this server needs a key');
      if (!res.ok) {
        const e = body.error || {};
        showError(res.status, e.code, e.message);
        return;
      }
      showResult(body);
    } catch (e) {
      showError(0, 'NETWORK', e.message);
    } finally {
      $('busy').hidden = true;
    }
  }

  /* ---- .npy files -------------------------------------------------- */

  function useFile(file) {
    if (!file) return;
    const reader = new FileReader();
    reader.onload = () => {
      state.npy = new Uint8Array(reader.result);
      state.npyName = file.name;
      $('drop').classList.add('loaded');
      $('drop-text').textContent = file.name + ' (' + file.size + ' bytes) will be sent as .npy; dtype and shape come from its header';
      $('npy-clear').hidden = false;
      $('data').disabled = true;
      $('dtype').disabled = true;   /* the file's header says */
    };
    reader.readAsArrayBuffer(file);
  }

  function clearFile() {
    state.npy = null;
    state.npyName = '';
    $('npy-file').value = '';
    $('drop').classList.remove('loaded');
    $('drop-text').textContent = 'drop a .npy file here';
    $('npy-clear').hidden = true;
    $('data').disabled = false;
    $('dtype').disabled = false;
  }

  function wire() {
    $('op').addEventListener('change', fillOpsets);
    $('opset').addEventListener('change', fillVersion);
    $('dtype').addEventListener('change', fillDtype);
    $('form').addEventListener('submit', run);
    $('key-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      state.key = $('key').value.trim();
      loadOps();
    });
    $('copy-curl').addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText($('curl').textContent);
        $('copied').hidden = false;
      } catch (e) {
        /* no clipboard (plain http from another host): select the text */
        const range = document.createRange();
        range.selectNodeContents($('curl'));
        window.getSelection().removeAllRanges();
        window.getSelection().addRange(range);
      }
    });
    const drop = $('drop');
    drop.addEventListener('dragover', (ev) => { ev.preventDefault(); drop.classList.add('over'); });
    drop.addEventListener('dragleave', () => drop.classList.remove('over'));
    drop.addEventListener('drop', (ev) => {
      ev.preventDefault();
      drop.classList.remove('over');
      useFile(ev.dataTransfer.files[0]);
    });
    $('npy-file').addEventListener('change', (ev) => useFile(ev.target.files[0]));
    $('npy-clear').addEventListener('click', clearFile);
  }

  /* A build without the docs UI (--disable-docs-ui) has no /docs. */
  function checkDocs() {
    fetch('/docs', { method: 'HEAD' }).then((res) => {
      if (res.status === 404) $('link-docs').hidden = true;
    }, () => {});
  }

  wire();
  loadOps();
  checkDocs();
})();
