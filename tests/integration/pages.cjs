// pages.cjs - drives the playground (/) and Swagger UI (/docs) in Debian's
// chromium through playwright-core (run by t_pages.sh, which starts the
// daemons and checks what this leaves in $OUT).
//   node pages.cjs
// Environment: URL (daemon), KEY_URL (a daemon with --api-key-file, or
// empty), KEY (its key), NPY (a .npy file: float64 [[3, 4], [6, 8]]),
// SHOTS (screenshot directory), OUT (files for t_pages.sh), DOCS (1: /docs
// is built in), CHROMIUM (the browser).
// Prints one line per check, "ok - NAME" or "not ok - NAME: DETAIL".
'use strict';

const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');

const env = process.env;
const URL0 = env.URL;
const results = [];
function ok(name) { results.push(true); console.log('ok - ' + name); }
function notok(name, detail) { results.push(false); console.log('not ok - ' + name + ': ' + detail); }
function check(name, cond, detail) { cond ? ok(name) : notok(name, detail); }
function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }

async function api(base, pathname, body, key) {
  const h = { 'Content-Type': 'application/json' };
  if (key) h.Authorization = 'Bearer ' + key;
  const res = await fetch(base + pathname, { method: 'POST', headers: h, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

// Every request of a context: off-host ones are aborted and recorded.
function guard(context, offhost, seen) {
  return context.route('**/*', (route) => {
    const u = new URL(route.request().url());
    seen.push(u.href);
    if ((u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '127.0.0.1') {
      offhost.push(u.href);
      return route.abort();
    }
    return route.continue();
  });
}

function watch(page, problems) {
  // Error answers the tests ask for (400, 401) are logged by chromium as
  // failed loads; anything else (a CSP violation, a script error) counts.
  page.on('console', (m) => {
    const t = m.text();
    if (m.type() === 'error' && !/favicon/.test(t) &&
        !/^Failed to load resource: the server responded with a status of (400|401|404)/.test(t))
      problems.push('console: ' + t);
  });
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
}

async function readResult(page) {
  await page.waitForSelector('#result:not([hidden]), #error:not([hidden])', { timeout: 20000 });
  return {
    shown: await page.isVisible('#result'),
    dtype: await page.textContent('#result-dtype'),
    shape: await page.textContent('#result-shape'),
    data: await page.textContent('#result-data'),
    error: await page.isVisible('#error') ? (await page.textContent('#error-code')) + ' ' + (await page.textContent('#error-message')) : '',
  };
}

async function playground(context, problems) {
  const page = await context.newPage();
  watch(page, problems);
  const resp = await page.goto(URL0 + '/');
  check('GET / answers 200 text/html', resp.status() === 200 && /^text\/html/.test(resp.headers()['content-type']),
    resp.status() + ' ' + resp.headers()['content-type']);
  check("GET / has Content-Security-Policy default-src 'self'",
    /^default-src 'self'/.test(resp.headers()['content-security-policy'] || ''), resp.headers()['content-security-policy']);
  await page.waitForFunction(() => document.getElementById('op').options.length > 0, null, { timeout: 20000 });

  // The operators offered are those of /v1/ops, in its order.
  const ops = (await (await fetch(URL0 + '/v1/ops')).json()).ops;
  const offered = await page.$$eval('#op option', (os) => os.map((o) => o.value));
  check('the operator list is /v1/ops', same(offered, ops.map((o) => o.op)), JSON.stringify(offered));
  const title = await page.title();
  check('the page title names the playground', title === 'reduced playground', title);
  const links = await page.$$eval('nav a', (as) => as.map((a) => a.getAttribute('href')));
  check('links to /docs and /metrics', links.includes('/docs') && links.includes('/metrics'), JSON.stringify(links));

  // A reduction: ReduceSumSquare-13 over axis 1 of [[1,2,3],[4,5,6]],
  // keepdims 0 = [1+4+9, 16+25+36] = [14, 77].
  await page.selectOption('#op', 'ReduceSumSquare');
  await page.selectOption('#opset', '13');
  const opsetText = await page.$eval('#opset', (s) => s.options[s.selectedIndex].textContent);
  check('opset 13 is ReduceSumSquare-13 (13–17)', opsetText === 'opset 13–17 (ReduceSumSquare-13)', opsetText);
  check('version 13 has no noop_with_empty_axes field', !(await page.isVisible('#noop')), 'visible');
  await page.fill('#axes', '1');
  await page.uncheck('#keepdims');
  await page.selectOption('#dtype', 'float32');
  await page.fill('#data', '[[1, 2, 3], [4, 5, 6]]');
  await page.click('#run');
  let r = await readResult(page);
  const want = await api(URL0, '/v1/reduce', { op: 'ReduceSumSquare', opset: 13, axes: [1], keepdims: 0,
    input: { dtype: 'float32', data: [[1, 2, 3], [4, 5, 6]] } });
  check('the API answers [14, 77]', want.status === 200 && same(want.body.output.data, [14, 77]), JSON.stringify(want));
  check('the page shows the result', r.shown, r.error);
  check('shown data [14, 77] = the API answer', same(JSON.parse(r.data || 'null'), want.body.output.data), r.data);
  check('shown shape [2], dtype float32', r.shape === '[2]' && r.dtype === 'float32', r.shape + ' ' + r.dtype);
  const curl = await page.textContent('#curl');
  fs.writeFileSync(path.join(env.OUT, 'curl-json.sh'), curl + '\n');
  check('the curl command is shown', /^curl -sS -X POST '.*\/v1\/reduce'/.test(curl), curl);
  await page.screenshot({ path: path.join(env.SHOTS, 'playground.png'), fullPage: true });

  // opset 18 of ReduceL2 shows noop_with_empty_axes (from /v1/ops).
  await page.selectOption('#op', 'ReduceL2');
  const v18 = await page.$eval('#opset', (s) => s.value);
  check('ReduceL2 defaults to its newest version', v18 === '18', v18);
  check('version 18 has noop_with_empty_axes', await page.isVisible('#noop'), 'hidden');

  // ArgMax (when the server has it): "axis" instead of "axes", and
  // select_last_index from version 12, as /v1/ops says.  Row-wise argmax
  // of [[1, 5, 2], [7, 0, 9]], keepdims 0 = [1, 2], int64.
  const argmax = ops.find((o) => o.op === 'ArgMax');
  if (argmax) {
    await page.selectOption('#op', 'ArgMax');
    const newest = argmax.versions[argmax.versions.length - 1];
    check('ArgMax shows axis, not axes', await page.isVisible('#axis') && !(await page.isVisible('#axes')), 'fields');
    check('ArgMax ' + newest.version + ': select_last_index as /v1/ops says',
      (await page.isVisible('#select-last')) === !!newest.select_last_index, String(newest.select_last_index));
    await page.fill('#axis', '1');
    await page.uncheck('#keepdims');
    await page.selectOption('#dtype', 'float32');
    await page.fill('#data', '[[1, 5, 2], [7, 0, 9]]');
    await page.click('#run');
    await page.waitForFunction(() => !document.getElementById('result').hidden &&
      document.getElementById('result-dtype').textContent === 'int64' ||
      !document.getElementById('error').hidden, null, { timeout: 20000 });
    r = await readResult(page);
    check('ArgMax over axis 1: [1, 2] int64', r.shown && same(JSON.parse(r.data || 'null'), [1, 2]) &&
      r.dtype === 'int64', JSON.stringify(r));
    await page.selectOption('#op', 'ReduceL2');
  }

  // A dropped .npy: ReduceL2 over axis 1 of float64 [[3,4],[6,8]],
  // keepdims 1 = [[5], [10]].
  const b64 = fs.readFileSync(env.NPY).toString('base64');
  const dt = await page.evaluateHandle((b) => {
    const bytes = Uint8Array.from(atob(b), (c) => c.charCodeAt(0));
    const t = new DataTransfer();
    t.items.add(new File([bytes], 'tensor.npy', { type: 'application/x-npy' }));
    return t;
  }, b64);
  await page.dispatchEvent('#drop', 'drop', { dataTransfer: dt });
  await page.waitForSelector('#drop.loaded', { timeout: 10000 });
  await page.fill('#axes', '1');
  await page.check('#keepdims');
  await page.click('#run');
  await page.waitForFunction(() => !document.getElementById('result').hidden &&
    document.getElementById('result-dtype').textContent === 'float64' ||
    !document.getElementById('error').hidden, null, { timeout: 20000 });
  r = await readResult(page);
  check('the dropped .npy is reduced: [[5], [10]], shape [2,1], float64',
    r.shown && same(JSON.parse(r.data || 'null'), [[5], [10]]) && r.shape === '[2,1]' && r.dtype === 'float64',
    JSON.stringify(r));
  const curlNpy = await page.textContent('#curl');
  check('the .npy curl command sends the file as application/x-npy',
    /Content-Type: application\/x-npy/.test(curlNpy) && /--data-binary @'tensor.npy'/.test(curlNpy) &&
    /\?op=ReduceL2&opset=18&axes=1&keepdims=1'/.test(curlNpy), curlNpy);
  fs.writeFileSync(path.join(env.OUT, 'curl-npy.sh'), curlNpy + '\n');

  // Errors: the server's (axis 5 of a 2-D tensor), with code and status;
  // and data that is not JSON (not sent).
  await page.click('#npy-clear');
  await page.fill('#data', '[[1, 2], [3, 4]]');
  await page.fill('#axes', '5');
  await page.click('#run');
  await page.waitForSelector('#error:not([hidden])', { timeout: 20000 });
  const code = await page.textContent('#error-code');
  const status = await page.textContent('#error-status');
  const msg = await page.textContent('#error-message');
  check('a bad axis shows 400 AXIS_OUT_OF_RANGE', code === 'AXIS_OUT_OF_RANGE' && status === '400', status + ' ' + code + ' ' + msg);
  check('the error message is shown', /5/.test(msg), msg);
  check('no result is shown with the error', !(await page.isVisible('#result')), 'result visible');
  await page.fill('#axes', '');
  await page.fill('#data', '[1, 2');
  await page.click('#run');
  await page.waitForFunction(() => document.getElementById('error-code').textContent === 'NOT_SENT', null, { timeout: 5000 })
    .then(() => ok('data that is not JSON is refused before sending'),
      async () => notok('data that is not JSON is refused before sending', await page.textContent('#error-code')));
  await page.close();
}

async function docs(context, problems) {
  const page = await context.newPage();
  watch(page, problems);
  const resp = await page.goto(URL0 + '/docs');
  check('GET /docs answers 200 text/html', resp.status() === 200 && /^text\/html/.test(resp.headers()['content-type']),
    String(resp.status()));
  check("GET /docs has Content-Security-Policy default-src 'self'",
    /^default-src 'self'/.test(resp.headers()['content-security-policy'] || ''), resp.headers()['content-security-policy']);
  const op = page.locator('#operations-reduce-reduce');
  await op.waitFor({ timeout: 30000 });
  ok('Swagger UI lists POST /v1/reduce');
  await op.locator('.opblock-summary').first().click();
  await op.locator('.try-out__btn').click();
  await op.locator('button.execute').click();
  const statusCell = op.locator('.live-responses-table .response .response-col_status').first();
  await statusCell.waitFor({ timeout: 30000 });
  const st = (await statusCell.textContent()).trim();
  const bodyText = (await op.locator('.live-responses-table .response-col_description pre').first().textContent()).trim();
  let body = null;
  try { body = JSON.parse(bodyText); } catch (e) { /* checked below */ }
  check('"Try it out" on /v1/reduce answers 200', st === '200', st + ' ' + bodyText.slice(0, 200));
  // The example request is the document's; its answer must be the API's.
  const reqUrl = (await op.locator('.request-url pre').first().textContent()).trim();
  check('"Try it out" went to the daemon that served the page', reqUrl.startsWith(URL0 + '/v1/reduce'), reqUrl);
  const curlBox = (await op.locator('.curl-command .curl').first().textContent()).trim();
  const m = /-d '([\s\S]*)'$/.exec(curlBox);
  let wantBody = null;
  if (m) {
    const w = await api(URL0, '/v1/reduce', JSON.parse(m[1]));
    wantBody = w.body;
  }
  check('the answer shown is the API answer to the same request', body !== null && same(body, wantBody),
    bodyText.slice(0, 200) + ' vs ' + JSON.stringify(wantBody));
  // The shot shows the live answer: its status and body.
  await op.locator('.live-responses-table').first().scrollIntoViewIfNeeded();
  await page.evaluate(() => window.scrollBy(0, -250));
  await page.screenshot({ path: path.join(env.SHOTS, 'docs.png'), fullPage: false });
  await page.close();
}

async function withKey(context, problems) {
  const page = await context.newPage();
  watch(page, problems);
  await page.goto(env.KEY_URL + '/');
  await page.waitForSelector('#key-box:not([hidden])', { timeout: 20000 });
  ok('with --api-key-file the page asks for a key');
  await page.fill('#key', 'wrong-key');
  await page.click('#key-use');
  await page.waitForFunction(() => /not accepted/.test(document.getElementById('key-status').textContent), null, { timeout: 10000 })
    .then(() => ok('a wrong key is said to be refused'), () => notok('a wrong key is said to be refused', 'no message'));
  await page.fill('#key', env.KEY);
  await page.click('#key-use');
  await page.waitForFunction(() => document.getElementById('op').options.length > 0, null, { timeout: 20000 });
  ok('with the key the operators load');
  await page.selectOption('#op', 'ReduceL2');
  await page.fill('#axes', '');
  await page.fill('#data', '[3, 4]');
  await page.click('#run');
  const r = await readResult(page);
  check('with the key a reduction answers [5] (keepdims 1: shape [1])',
    r.shown && same(JSON.parse(r.data || 'null'), [5]) && r.shape === '[1]', JSON.stringify(r));
  const curl = await page.textContent('#curl');
  check('the curl command names the key by variable, not its value',
    curl.includes('$REDUCED_API_KEY') && !curl.includes(env.KEY), curl);
  if (env.DOCS === '1') {
    await page.goto(env.KEY_URL + '/docs');
    await page.waitForSelector('#rd-key:not([hidden])', { timeout: 20000 });
    await page.fill('#rd-key-input', env.KEY);
    await page.click('#rd-key-form button');
    await page.locator('#operations-reduce-reduce').waitFor({ timeout: 30000 });
    ok('/docs with a key: asks for it, then shows the API');
  }
  await page.close();
}

(async () => {
  // A fresh profile (playwright takes it as launchPersistentContext's
  // directory rather than a --user-data-dir argument).
  const dir = fs.mkdtempSync(path.join(env.OUT, 'chromium-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1100, height: 900 },
  });
  const offhost = [], seen = [], problems = [];
  try {
    await guard(context, offhost, seen);
    for (const [name, fn] of [['playground', playground], ['docs', docs], ['key', withKey]]) {
      if (name === 'docs' && env.DOCS !== '1') continue;
      if (name === 'key' && !env.KEY_URL) continue;
      try {
        await fn(context, problems);
      } catch (e) {
        notok(name + ' ran to its end', e.message.split('\n')[0]);
      }
    }
  } finally {
    await context.close();
  }
  check('no request left 127.0.0.1', offhost.length === 0, offhost.join(' '));
  check('requests were seen (the guard works)', seen.some((u) => u.endsWith('/v1/ops')), String(seen.length));
  check('no console error, CSP violation or page error', problems.length === 0, problems.join(' | '));
  process.exit(results.every((x) => x) ? 0 : 1);
})().catch((e) => { console.log('not ok - the browser test ran: ' + e.message); process.exit(1); });
