// The API docs page (GET {api_prefix}/docs): reads the OpenAPI document (and the AsyncAPI one when the
// gateway serves it) with the signed-in token, renders the operations by tag and sends "Try it" requests.
// Plain DOM code, no framework; every text goes in through textContent, never as HTML (ADR 0018).

/** The sessionStorage key the dashboard signs in with: one sign-in for both pages. */
const TOKEN_KEY = 'gatehouse.token';
/** Characters of a response body shown at most. */
const MAX_BODY_CHARS = 200_000;
/** How deep a schema is printed before it is cut with `…`. */
const MAX_SCHEMA_DEPTH = 8;

const root = document.documentElement;
const apiBase = root.dataset.apiBase ?? '';
const tokenHeader = root.dataset.tokenHeader || 'X-API-Token';

// spec (DECISIONS §14): a `#token=…` fragment signs in and leaves the URL at once.
takeFragmentToken();

const $ = (id) => {
  const element = document.getElementById(id);
  if (!element) throw new Error(`missing #${id}`);
  return element;
};

/** Moves `#token=…` into sessionStorage and removes it from the address bar and the history entry. */
function takeFragmentToken() {
  if (!location.hash.includes('token=')) return;
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get('token');
  params.delete('token');
  const rest = params.toString();
  history.replaceState(history.state, '', location.pathname + location.search + (rest ? `#${rest}` : ''));
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
}

/**
 * Creates an element. `props`: `class`, `text`, `hidden`, or any attribute (false, null and undefined leave it
 * out). Children are nodes or strings (as text).
 */
function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') element.className = value;
    else if (key === 'text') element.textContent = value;
    else if (key === 'hidden') element.hidden = Boolean(value);
    else element.setAttribute(key, value === true ? '' : String(value));
  }
  return appendAll(element, children);
}

/** Appends nodes and strings (as text), skipping null, undefined and false (`append` would write "null"). */
function appendAll(parent, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return parent;
}

// --- sign-in ------------------------------------------------------------------------------------------------

const getToken = () => sessionStorage.getItem(TOKEN_KEY);

function setStatus(text) {
  $('status').textContent = text;
}

function showAlert(text) {
  const alert = $('alert');
  alert.textContent = text;
  alert.hidden = !text;
}

function showSignIn(message) {
  $('docs').hidden = true;
  $('toc').hidden = true;
  $('account').hidden = true;
  $('sign-in').hidden = false;
  setStatus('');
  showAlert(message ?? '');
  $('token').focus();
}

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  $('operations').replaceChildren();
  $('toc').replaceChildren();
  showSignIn();
  setStatus('Signed out.');
}

$('sign-in-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = $('token');
  const token = input.value.trim();
  if (!token) return;
  sessionStorage.setItem(TOKEN_KEY, token);
  input.value = '';
  void load();
});
$('sign-out').addEventListener('click', signOut);
$('filter').addEventListener('input', () => applyFilter($('filter').value));

/** Headers of every request the page sends: the token, in the gateway's token header. */
function authHeaders() {
  const token = getToken();
  return token ? { [tokenHeader]: token } : {};
}

// --- loading ------------------------------------------------------------------------------------------------

async function fetchJson(path) {
  const res = await fetch(apiBase + path, {
    headers: { ...authHeaders(), accept: 'application/json' },
    cache: 'no-store',
  });
  const body = res.ok ? await res.json() : await res.text();
  return { status: res.status, body };
}

async function load() {
  if (!getToken()) {
    showSignIn();
    return;
  }
  showAlert('');
  setStatus('Loading the API document…');
  let answer;
  try {
    answer = await fetchJson('/openapi.json');
  } catch {
    showSignIn('Could not reach the gateway. Check that it is running, then sign in again.');
    return;
  }
  if (answer.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    showSignIn('Token refused: the gateway answered 401 Unauthorized. Check the token and sign in again.');
    return;
  }
  if (answer.status !== 200) {
    showSignIn(`Could not load the API document: the gateway answered ${answer.status}. ${errorText(answer.body)}`);
    return;
  }
  const doc = answer.body;
  let asyncDoc = null;
  // The AsyncAPI document is read only when the gateway lists it, so no request is made in vain.
  if (Object.keys(doc.paths ?? {}).some((path) => path.endsWith('/asyncapi.json'))) {
    try {
      const streams = await fetchJson('/asyncapi.json');
      if (streams.status === 200) asyncDoc = streams.body;
    } catch {
      asyncDoc = null;
    }
  }
  render(doc, asyncDoc);
}

function errorText(body) {
  try {
    const parsed = typeof body === 'string' ? JSON.parse(body) : body;
    return parsed?.error?.message ?? '';
  } catch {
    return '';
  }
}

// --- schemas ------------------------------------------------------------------------------------------------

/** Resolves a local `$ref` (`#/components/schemas/X`) in `doc`; anything else stays as it is. */
function deref(doc, schema) {
  let current = schema;
  for (let hops = 0; current && typeof current.$ref === 'string' && hops < 16; hops++) {
    if (!current.$ref.startsWith('#/')) return current;
    let target = doc;
    for (const part of current.$ref.slice(2).split('/')) {
      target = target?.[part.replaceAll('~1', '/').replaceAll('~0', '~')];
    }
    if (!target) return current;
    current = target;
  }
  return current;
}

const refName = (ref) => ref.slice(ref.lastIndexOf('/') + 1);

/** `1–100`, `≥ 1`, `≤ 100`, or '' when unbounded. */
function range(min, max) {
  if (min !== undefined && max !== undefined) return min === max ? `${min}` : `${min}–${max}`;
  if (min !== undefined) return min > 0 ? `≥ ${min}` : '';
  return max !== undefined ? `≤ ${max}` : '';
}

/** Constraints worth a reader's glance, as a short note. */
function constraints(schema) {
  const notes = [];
  if (schema.format) notes.push(schema.format);
  const length = range(schema.minLength, schema.maxLength);
  if (length) notes.push(`${length} chars`);
  // An integer's safe range (±(2^53 − 1)) says nothing a reader needs.
  const bound = (value) => value !== undefined && Math.abs(value) !== Number.MAX_SAFE_INTEGER;
  if (bound(schema.minimum)) notes.push(`≥ ${schema.minimum}`);
  if (schema.exclusiveMinimum !== undefined) notes.push(`> ${schema.exclusiveMinimum}`);
  if (bound(schema.maximum)) notes.push(`≤ ${schema.maximum}`);
  if (schema.exclusiveMaximum !== undefined) notes.push(`< ${schema.exclusiveMaximum}`);
  const items = range(schema.minItems, schema.maxItems);
  if (items) notes.push(`${items} items`);
  if (schema.pattern) notes.push(`pattern ${schema.pattern}`);
  if (schema.default !== undefined) notes.push(`default ${JSON.stringify(schema.default)}`);
  return notes;
}

/**
 * A compact, TypeScript-like text of a JSON schema: `{ name?: string; … }`, `A | B`, `T[]`. Named shared
 * schemas (`$ref`) print as their name; they are listed once under "Shared schemas".
 */
function schemaText(schema, indent = '', depth = 0) {
  if (schema === true || schema === undefined || schema === null) return 'any';
  if (schema === false) return 'never';
  if (typeof schema.$ref === 'string') return refName(schema.$ref);
  if (depth > MAX_SCHEMA_DEPTH) return '…';
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  for (const [key, glue] of [
    ['anyOf', ' | '],
    ['oneOf', ' | '],
    ['allOf', ' & '],
  ]) {
    if (Array.isArray(schema[key])) {
      return schema[key].map((part) => schemaText(part, indent, depth + 1)).join(glue);
    }
  }
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (types.length > 1) {
    return types.map((type) => schemaText({ ...schema, type }, indent, depth + 1)).join(' | ');
  }
  const type = types[0] ?? (schema.properties ? 'object' : schema.items ? 'array' : undefined);
  switch (type) {
    case 'object': {
      const properties = Object.entries(schema.properties ?? {});
      const extra = schema.additionalProperties;
      if (properties.length === 0) {
        if (extra && typeof extra === 'object') return `{ [key: string]: ${schemaText(extra, indent, depth + 1)} }`;
        return 'object';
      }
      const required = new Set(schema.required ?? []);
      const inner = indent + '  ';
      const lines = properties.map(([name, property]) => {
        const notes = typeof property === 'object' && property ? constraints(property) : [];
        const description = typeof property === 'object' && property?.description ? property.description : '';
        const comment = [notes.join(', '), description].filter(Boolean).join(' — ');
        const optional = required.has(name) ? '' : '?';
        return `${inner}${name}${optional}: ${schemaText(property, inner, depth + 1)}${comment ? `  // ${comment}` : ''}`;
      });
      return `{\n${lines.join('\n')}\n${indent}}`;
    }
    case 'array': {
      const item = schemaText(schema.items, indent, depth + 1);
      return /[|&]/.test(item) && !item.startsWith('{') ? `(${item})[]` : `${item}[]`;
    }
    case undefined:
      return 'any';
    default:
      return String(type);
  }
}

/** An example value of `schema`: its example or default, or a skeleton (required properties only). */
function exampleOf(doc, schema, depth = 0) {
  const s = deref(doc, schema);
  if (!s || typeof s !== 'object' || depth > MAX_SCHEMA_DEPTH) return null;
  if (s.example !== undefined) return s.example;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if (s.default !== undefined) return s.default;
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  const variants = s.anyOf ?? s.oneOf;
  if (Array.isArray(variants)) {
    const first = variants.find((v) => deref(doc, v)?.type !== 'null') ?? variants[0];
    return exampleOf(doc, first, depth + 1);
  }
  if (Array.isArray(s.allOf)) {
    return Object.assign({}, ...s.allOf.map((part) => exampleOf(doc, part, depth + 1) ?? {}));
  }
  const types = Array.isArray(s.type) ? s.type.filter((t) => t !== 'null') : [s.type];
  const type = types[0] ?? (s.properties ? 'object' : undefined);
  switch (type) {
    case 'object': {
      const out = {};
      for (const name of s.required ?? []) out[name] = exampleOf(doc, s.properties?.[name], depth + 1);
      return out;
    }
    case 'array':
      return s.minItems > 0 ? [exampleOf(doc, s.items, depth + 1)] : [];
    case 'string':
      return stringExample(s);
    case 'integer':
    case 'number':
      return s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 0);
    case 'boolean':
      return false;
    default:
      return null;
  }
}

function stringExample(s) {
  switch (s.format) {
    case 'date-time':
      return new Date().toISOString();
    case 'date':
      return new Date().toISOString().slice(0, 10);
    case 'uri':
    case 'url':
      return 'https://example.com/';
    case 'email':
      return 'user@example.com';
    case 'uuid':
      return '00000000-0000-4000-8000-000000000000';
    default:
      return 'string'.padEnd(s.minLength ?? 0, '-').slice(0, s.maxLength ?? Infinity);
  }
}

// --- rendering ----------------------------------------------------------------------------------------------

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const slug = (text) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');

/** Every operation of the document, grouped by its first tag, tags in the document's order. */
function groupOperations(doc) {
  const groups = new Map();
  for (const tag of doc.tags ?? []) groups.set(tag.name, { description: tag.description ?? '', operations: [] });
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item?.[method];
      if (!operation) continue;
      const tag = operation.tags?.[0] ?? 'other';
      if (!groups.has(tag)) groups.set(tag, { description: '', operations: [] });
      const parameters = [...(item.parameters ?? []), ...(operation.parameters ?? [])].map((p) => deref(doc, p));
      groups.get(tag).operations.push({ path, method, operation, parameters });
    }
  }
  return [...groups].filter(([, group]) => group.operations.length > 0);
}

function render(doc, asyncDoc) {
  $('version').textContent = doc.info?.version ? `v${doc.info.version}` : '';
  $('description').textContent = doc.info?.description ?? '';
  const groups = groupOperations(doc);
  const toc = $('toc');
  toc.replaceChildren(
    h('h2', { class: 'toc-title', text: 'Groups' }),
    h(
      'ul',
      {},
      groups.map(([tag, group]) =>
        h(
          'li',
          {},
          h('a', { href: `#tag-${slug(tag)}` }, tag),
          ' ',
          h('span', { class: 'count' }, `(${group.operations.length})`),
        ),
      ),
    ),
  );
  let count = 0;
  const sections = groups.map(([tag, group]) => {
    count += group.operations.length;
    return h(
      'section',
      { class: 'tag', id: `tag-${slug(tag)}`, 'aria-labelledby': `tag-${slug(tag)}-title`, 'data-tag': tag },
      h('h2', { id: `tag-${slug(tag)}-title`, text: tag }),
      group.description ? h('p', { text: group.description }) : null,
      group.operations.map((entry) => renderOperation(doc, entry)),
    );
  });
  $('operations').replaceChildren(...sections);
  renderStreams(doc, asyncDoc);
  renderSharedSchemas(doc);

  $('sign-in').hidden = true;
  $('account').hidden = false;
  $('toc').hidden = false;
  $('docs').hidden = false;
  showAlert('');
  setStatus(`Signed in. ${count} operations in ${groups.length} groups.`);
  applyFilter($('filter').value);
  $('main').focus({ preventScroll: true });
}

function renderOperation(doc, { path, method, operation, parameters }) {
  const id = `op-${operation.operationId ? slug(operation.operationId) : slug(`${method}-${path}`)}`;
  const permission = operation['x-permission'];
  const rateGroup = operation['x-rate-group'];
  const body = operation.requestBody ? deref(doc, operation.requestBody) : null;
  const bodySchema = body?.content?.['application/json']?.schema;

  const details = h(
    'details',
    {
      class: 'op',
      id,
      'data-search': `${method} ${path} ${operation.summary ?? ''} ${operation.tags?.join(' ') ?? ''}`.toLowerCase(),
    },
    h(
      'summary',
      {},
      h('span', { class: `method method-${method}`, text: method.toUpperCase() }),
      h('code', { class: 'path', text: path }),
      h('span', { class: 'op-summary', text: operation.summary ?? '' }),
      permission ? h('span', { class: `perm perm-${permission}`, text: permission }) : null,
    ),
  );
  const content = h('div', { class: 'op-body' });
  details.append(content);
  // The body is built when first opened: a large document stays quick to render.
  details.addEventListener('toggle', () => {
    if (!details.open || content.childElementCount > 0) return;
    appendAll(
      content,
      operation.description ? h('p', { text: operation.description }) : null,
      h(
        'p',
        { class: 'meta' },
        h('span', {}, 'Permission: ', h('strong', { text: permission ?? 'unknown' })),
        ' · ',
        h('span', {}, 'Rate group: ', h('strong', { text: rateGroup ?? 'none' })),
      ),
      renderParameters(parameters),
      bodySchema
        ? h(
            'div',
            { class: 'block' },
            h('h4', { text: `Request body${body.required ? '' : ' (optional)'}` }),
            schemaBlock(bodySchema),
          )
        : null,
      renderResponses(doc, operation.responses ?? {}),
      renderTryIt(doc, { id, path, method, parameters, bodySchema }),
    );
  });
  return details;
}

function renderParameters(parameters) {
  if (parameters.length === 0) return null;
  return h(
    'div',
    { class: 'block' },
    h('h4', { text: 'Parameters' }),
    h(
      'table',
      {},
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Name', 'In', 'Type', 'Description'].map((label) => h('th', { scope: 'col', text: label })),
        ),
      ),
      h(
        'tbody',
        {},
        parameters.map((p) =>
          h(
            'tr',
            {},
            h(
              'td',
              {},
              h('code', { text: p.name }),
              p.required ? h('span', { class: 'req', text: ' required' }) : null,
            ),
            h('td', { text: p.in }),
            h('td', {}, h('code', { class: 'type', text: schemaText(p.schema) })),
            h('td', {
              text: [constraints(p.schema ?? {}).join(', '), p.description ?? ''].filter(Boolean).join(' — '),
            }),
          ),
        ),
      ),
    ),
  );
}

function renderResponses(doc, responses) {
  const rows = Object.entries(responses).map(([status, raw]) => {
    const response = deref(doc, raw);
    const contents = Object.entries(response.content ?? {});
    const cell = contents.length
      ? contents.map(([type, media]) =>
          h(
            'div',
            {},
            contents.length > 1 || type !== 'application/json' ? h('span', { class: 'ctype', text: type }) : null,
            media.schema ? schemaBlock(media.schema) : null,
          ),
        )
      : null;
    return h(
      'tr',
      {},
      h('td', {}, h('span', { class: `status status-${status[0]}`, text: status })),
      h('td', { text: response.description ?? '' }),
      h('td', {}, cell),
    );
  });
  return h(
    'div',
    { class: 'block' },
    h('h4', { text: 'Responses' }),
    h(
      'table',
      { class: 'responses' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Status', 'Description', 'Body'].map((label) => h('th', { scope: 'col', text: label })),
        ),
      ),
      h('tbody', {}, rows),
    ),
  );
}

/** A schema as a block: a shared one (`$ref`) as a link to its entry under "Shared schemas". */
function schemaBlock(schema) {
  if (typeof schema.$ref === 'string' && schema.$ref.startsWith('#/components/schemas/')) {
    const name = refName(schema.$ref);
    return h('a', { class: 'ref', href: `#schema-${slug(name)}` }, h('code', { text: name }));
  }
  return h('pre', { class: 'schema', text: schemaText(schema) });
}

function renderStreams(doc, asyncDoc) {
  const body = $('streams-body');
  const parts = [];
  const streams = Object.entries(doc['x-streams'] ?? {});
  if (streams.length) {
    parts.push(
      h(
        'dl',
        { class: 'streams' },
        streams.flatMap(([name, text]) => [h('dt', {}, h('code', { text: name })), h('dd', { text: String(text) })]),
      ),
    );
  }
  if (asyncDoc) parts.push(renderAsyncApi(asyncDoc));
  body.replaceChildren(...parts);
  $('streams').hidden = parts.length === 0;
}

/** The AsyncAPI document (3.x operations, or 2.x channels with publish/subscribe), compactly. */
function renderAsyncApi(asyncDoc) {
  const items = [];
  const messageBlocks = (messages) =>
    Object.entries(messages ?? {}).map(([key, raw]) => {
      const message = deref(asyncDoc, raw);
      const name = message.name ?? message.title ?? (raw.$ref ? refName(raw.$ref) : key);
      return h(
        'div',
        { class: 'message' },
        h('h5', { text: name }),
        message.summary || message.description ? h('p', { text: message.summary ?? message.description }) : null,
        message.payload ? h('pre', { class: 'schema', text: schemaText(deref(asyncDoc, message.payload)) }) : null,
      );
    });
  const operations = Object.entries(asyncDoc.operations ?? {});
  for (const [id, operation] of operations) {
    const channel = deref(asyncDoc, operation.channel ?? {});
    const messages = operation.messages?.length
      ? Object.fromEntries(operation.messages.map((m, i) => [String(i), deref(asyncDoc, m)]))
      : channel.messages;
    items.push(
      h(
        'details',
        { class: 'op' },
        h(
          'summary',
          {},
          h('span', {
            class: `method method-${operation.action === 'send' ? 'post' : 'get'}`,
            text: operation.action ?? '',
          }),
          h('code', { class: 'path', text: channel.address ?? id }),
          h('span', { class: 'op-summary', text: operation.summary ?? operation.title ?? id }),
        ),
        h(
          'div',
          { class: 'op-body' },
          operation.description ? h('p', { text: operation.description }) : null,
          messageBlocks(messages),
        ),
      ),
    );
  }
  if (operations.length === 0) {
    for (const [address, channel] of Object.entries(asyncDoc.channels ?? {})) {
      for (const action of ['subscribe', 'publish']) {
        const operation = channel[action];
        if (!operation) continue;
        items.push(
          h(
            'details',
            { class: 'op' },
            h(
              'summary',
              {},
              h('span', { class: `method method-${action === 'publish' ? 'post' : 'get'}`, text: action }),
              h('code', { class: 'path', text: address }),
              h('span', { class: 'op-summary', text: operation.summary ?? channel.description ?? '' }),
            ),
            h('div', { class: 'op-body' }, messageBlocks({ message: operation.message })),
          ),
        );
      }
    }
  }
  return h(
    'div',
    { class: 'asyncapi' },
    h('h3', { text: `${asyncDoc.info?.title ?? 'Event streams'} (AsyncAPI ${asyncDoc.asyncapi ?? ''})`.trim() }),
    asyncDoc.info?.description ? h('p', { text: asyncDoc.info.description }) : null,
    items,
  );
}

function renderSharedSchemas(doc) {
  const schemas = Object.entries(doc.components?.schemas ?? {});
  $('schemas').hidden = schemas.length === 0;
  $('schemas-body').replaceChildren(
    ...schemas.map(([name, schema]) =>
      h(
        'div',
        { class: 'shared', id: `schema-${slug(name)}` },
        h('h3', {}, h('code', { text: name })),
        schema.description ? h('p', { text: schema.description }) : null,
        h('pre', { class: 'schema', text: schemaText(schema) }),
      ),
    ),
  );
}

function applyFilter(text) {
  const words = text.toLowerCase().split(/\s+/).filter(Boolean);
  for (const section of document.querySelectorAll('#operations section.tag')) {
    let shown = 0;
    for (const op of section.querySelectorAll('details.op')) {
      const haystack = `${op.dataset.search} ${section.dataset.tag.toLowerCase()}`;
      op.hidden = !words.every((word) => haystack.includes(word));
      if (!op.hidden) shown++;
    }
    section.hidden = shown === 0;
  }
}

// --- Try it -------------------------------------------------------------------------------------------------

function parameterField(id, p) {
  const schema = p.schema ?? {};
  const fieldId = `${id}-${p.in}-${slug(p.name)}`;
  const options = Array.isArray(schema.enum) ? schema.enum : schema.type === 'boolean' ? [true, false] : null;
  const label = h(
    'label',
    { for: fieldId },
    h('code', { text: p.name }),
    ` (${p.in}${p.required ? ', required' : ''})`,
  );
  const control = options
    ? h(
        'select',
        { id: fieldId, 'data-name': p.name, 'data-in': p.in, required: p.required },
        p.required ? null : h('option', { value: '', text: '—' }),
        options.map((value) => h('option', { value: String(value), text: String(value) })),
      )
    : h('input', {
        id: fieldId,
        type: 'text',
        'data-name': p.name,
        'data-in': p.in,
        required: p.required,
        placeholder: schemaText(schema).split('\n')[0],
        spellcheck: 'false',
        autocomplete: 'off',
      });
  return h('div', { class: 'field' }, label, control);
}

function renderTryIt(doc, { id, path, method, parameters, bodySchema }) {
  const fields = parameters.filter((p) => ['path', 'query', 'header'].includes(p.in)).map((p) => parameterField(id, p));
  const bodyId = `${id}-body`;
  const bodyField = bodySchema
    ? h(
        'div',
        { class: 'field' },
        h('label', { for: bodyId, text: 'Request body (JSON)' }),
        h('textarea', { id: bodyId, rows: 8, spellcheck: 'false' }),
      )
    : null;
  if (bodyField) bodyField.querySelector('textarea').value = JSON.stringify(exampleOf(doc, bodySchema), null, 2);
  const result = h('div', { class: 'result', 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'try', 'aria-label': `Try ${method.toUpperCase()} ${path}` },
    h('h4', { text: 'Try it' }),
    fields,
    bodyField,
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit', text: 'Send request' }),
      h('button', { type: 'button', class: 'stop', hidden: true, text: 'Stop' }),
    ),
    result,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void send(form, { path, method, result });
  });
  return form;
}

async function send(form, { path, method, result }) {
  let url = path;
  const query = new URLSearchParams();
  const headers = { ...authHeaders() };
  for (const control of form.querySelectorAll('[data-name]')) {
    const { name, in: where } = control.dataset;
    const value = control.value;
    if (where === 'path') url = url.replace(`{${name}}`, encodeURIComponent(value));
    else if (value === '') continue;
    else if (where === 'query') query.append(name, value);
    else if (where === 'header') headers[name] = value;
  }
  if (query.toString()) url += `?${query}`;
  const init = { method: method.toUpperCase(), headers, cache: 'no-store' };
  const textarea = form.querySelector('textarea');
  if (textarea && textarea.value.trim() !== '') {
    try {
      JSON.parse(textarea.value);
    } catch (err) {
      result.replaceChildren(
        h('p', { class: 'error', role: 'alert', text: `The body is not valid JSON: ${err.message}` }),
      );
      textarea.focus();
      return;
    }
    init.body = textarea.value;
    headers['content-type'] = 'application/json';
  }
  const button = form.querySelector('button[type="submit"]');
  const stop = form.querySelector('button.stop');
  const controller = new AbortController();
  const onStop = () => controller.abort();
  button.disabled = true;
  stop.hidden = false;
  stop.addEventListener('click', onStop);
  result.replaceChildren(h('p', { class: 'pending', text: `Sending ${init.method} ${url}…` }));
  const started = performance.now();
  try {
    const res = await fetch(url, { ...init, signal: controller.signal });
    // Status and headers show as soon as they arrive; the body follows (a stream such as ?follow=true live).
    const shown = showResult(result, { method: init.method, url, res, ms: Math.round(performance.now() - started) });
    const text = await readBody(res, (sofar) => (shown.textContent = sofar), controller.signal);
    shown.textContent = prettyBody(res, text) || '(empty)';
  } catch (err) {
    const stopped = controller.signal.aborted;
    const shown = result.querySelector('pre.body');
    if (stopped && shown) shown.textContent += '\n(stopped)';
    else result.replaceChildren(h('p', { class: 'error', role: 'alert', text: `The request failed: ${err.message}` }));
  } finally {
    stop.removeEventListener('click', onStop);
    stop.hidden = true;
    button.disabled = false;
  }
}

/**
 * Reads the body as text, telling `onText` what has arrived so far; at most MAX_BODY_CHARS (then cut).
 * Rejects when `signal` aborts (the Stop button).
 */
async function readBody(res, onText, signal) {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    if (signal.aborted) throw new Error('stopped');
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (text.length > MAX_BODY_CHARS) {
      await reader.cancel();
      return `${text.slice(0, MAX_BODY_CHARS)}\n… (cut at ${MAX_BODY_CHARS} characters)`;
    }
    onText(text);
  }
  return text + decoder.decode();
}

/** JSON bodies indented; anything else as it came. */
function prettyBody(res, text) {
  if (!text || !(res.headers.get('content-type') ?? '').includes('json')) return text;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** Shows the status line and headers of `res`; answers the (still empty) element the body goes in. */
function showResult(result, { method, url, res, ms }) {
  const headerText = [...res.headers].map(([name, value]) => `${name}: ${value}`).join('\n');
  const body = h('pre', { class: 'body', tabindex: 0, 'aria-label': 'Response body', text: '' });
  result.replaceChildren(
    h(
      'p',
      { class: 'response-line' },
      `${method} ${url} → `,
      h(
        'strong',
        { class: `status status-${String(res.status)[0]}`, 'data-status': res.status },
        `${res.status} ${res.statusText}`,
      ),
      ` in ${ms} ms`,
    ),
    h('h5', { text: 'Response headers' }),
    h('pre', { class: 'headers', tabindex: 0, 'aria-label': 'Response headers', text: headerText }),
    h('h5', { text: 'Response body' }),
    body,
  );
  return body;
}

void load();
