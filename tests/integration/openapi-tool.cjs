// openapi-tool.cjs - helpers of t_openapi.sh (Node; js-yaml and ajv come
// from the test's build-local node_modules through NODE_PATH).
//
//   node openapi-tool.cjs paths DOC
//     one line per path: PATH <TAB> planned|served <TAB> METHODS (upper
//     case, sorted, comma-separated)
//   node openapi-tool.cjs body DOC PATH METHOD STATUS MEDIA-TYPE FILE
//     validates the JSON in FILE against the schema DOC gives for that
//     response; exit 0 if valid, 1 with the errors, 2 if DOC describes no
//     such response
'use strict';
const fs = require('fs');
const yaml = require('js-yaml');

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

function load(file) {
  return yaml.load(fs.readFileSync(file, 'utf8'), { schema: yaml.JSON_SCHEMA });
}

// Follows a local $ref ("#/components/...").
function deref(doc, obj) {
  while (obj && typeof obj.$ref === 'string') {
    if (!obj.$ref.startsWith('#/')) throw new Error('non-local $ref ' + obj.$ref);
    obj = obj.$ref.slice(2).split('/').reduce(
      (o, k) => (o === undefined ? undefined : o[k.replace(/~1/g, '/').replace(/~0/g, '~')]), doc);
  }
  return obj;
}

function paths(doc) {
  for (const [p, item] of Object.entries(doc.paths || {})) {
    const ms = METHODS.filter((m) => item[m] !== undefined).map((m) => m.toUpperCase()).sort();
    console.log([p, item['x-reduced-planned'] === true ? 'planned' : 'served', ms.join(',')].join('\t'));
  }
}

function body(doc, path, method, status, mediaType, file) {
  const item = (doc.paths || {})[path];
  const op = item && item[method.toLowerCase()];
  const resp = op && deref(doc, (op.responses || {})[status]);
  const media = resp && resp.content && resp.content[mediaType];
  if (!media || !media.schema) {
    console.log(`no schema for ${method} ${path} ${status} ${mediaType}`);
    return 2;
  }
  const Ajv2020 = require('ajv/dist/2020');
  // strict off: OpenAPI adds keywords (example, contentMediaType...) that
  // plain JSON Schema validators do not know.
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  // The whole document under one id, so that "#/components/..." refs in
  // the response schema resolve against it.
  ajv.addSchema({ $id: 'openapi:doc', components: doc.components });
  const schema = JSON.parse(JSON.stringify(media.schema).replace(
    /"\$ref":"#\//g, '"$ref":"openapi:doc#/'));
  const validate = ajv.compile(schema);
  let value;
  try {
    value = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    console.log('not JSON: ' + e.message);
    return 1;
  }
  if (validate(value)) return 0;
  console.log(ajv.errorsText(validate.errors, { separator: '; ' }));
  return 1;
}

const [cmd, file, ...rest] = process.argv.slice(2);
const doc = load(file);
if (cmd === 'paths') {
  paths(doc);
} else if (cmd === 'body' && rest.length === 5) {
  process.exitCode = body(doc, ...rest);
} else {
  console.error('usage: openapi-tool.cjs paths DOC | body DOC PATH METHOD STATUS MEDIA-TYPE FILE');
  process.exitCode = 2;
}
