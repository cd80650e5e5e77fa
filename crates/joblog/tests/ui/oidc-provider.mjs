// A real OpenID provider for joblog's single sign-on tests: node-oidc-provider
// (an OpenID Certified implementation), on a free loopback port, with one
// confidential client `joblog` whose redirect URI is given, PKCE required,
// and a few people and their groups. Its login page is a plain form (name
// only: who signs in is the test's choice, not what is tested).
//
//   node oidc-provider.mjs --redirect http://127.0.0.1:PORT/api/v1/session/oidc/callback
//       [--clock-offset SECONDS]  the provider's clock off by that much (a
//                                 negative offset issues tokens already expired)
//       [--wrong-audience]        ID tokens made out to another client
//
// Prints one line of JSON, {"issuer": "..."}, once it listens.

import http from 'node:http';
import crypto from 'node:crypto';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    redirect: { type: 'string' },
    'clock-offset': { type: 'string', default: '0' },
    'wrong-audience': { type: 'boolean', default: false },
  },
});
if (!args.redirect) throw new Error('--redirect is required');

// Before the provider is loaded: it reads the time through Date.now.
const offset = Number(args['clock-offset']) * 1000;
if (offset) {
  const realNow = Date.now;
  Date.now = () => realNow() + offset;
}
const { default: Provider } = await import('oidc-provider');

export const CLIENT_SECRET = 'joblog-test-client-secret-0123456789';

// Their groups are what joblog's role mapping reads.
const people = {
  alice: { groups: ['ops'] },
  bob: { groups: ['staff', 'joblog-admins'] },
  carol: { groups: ['sales'] },
  erin: { groups: ['ops'] },
  // A name joblog cannot take as a user name.
  dave: { groups: ['ops'], preferred_username: 'dave smith' },
};

const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key', use: 'sig', alg: 'RS256' };

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'joblog',
    client_secret: CLIENT_SECRET,
    redirect_uris: [args.redirect],
    response_types: ['code'],
    grant_types: ['authorization_code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  jwks: { keys: [jwk] },
  pkce: { required: () => true },
  scopes: ['openid', 'profile', 'email', 'groups'],
  claims: {
    openid: ['sub'],
    profile: ['preferred_username', 'name'],
    email: ['email'],
    groups: ['groups'],
  },
  async findAccount(ctx, id) {
    const person = people[id];
    if (!person) return undefined;
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          preferred_username: person.preferred_username ?? id,
          name: id,
          email: `${id}@example.com`,
          groups: person.groups,
        };
      },
    };
  },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  features: { devInteractions: { enabled: false } },
  cookies: { keys: ['oidc-provider-test-cookie-key'] },
  ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 600, Grant: 600 },
});

if (args['wrong-audience']) {
  // The token is signed as usual, but says it is for another client.
  const issue = provider.IdToken.prototype.issue;
  provider.IdToken.prototype.issue = async function (...rest) {
    const real = this.client;
    this.client = new Proxy(real, {
      get: (target, prop) => (prop === 'clientId' ? 'another-app' : Reflect.get(target, prop)),
    });
    try {
      return await issue.apply(this, rest);
    } finally {
      this.client = real;
    }
  };
}

const escape = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

async function interaction(req, res) {
  const [, , uid, action] = req.url.split('?')[0].split('/');
  if (req.method === 'GET' && !action) {
    await provider.interactionDetails(req, res);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html lang="en"><head><title>Test provider</title><link rel="icon" href="data:,"></head><body>
<main><h1>Test provider</h1><form method="post" action="/interaction/${escape(uid)}/login">
<label>Name <input name="login" autofocus></label> <button type="submit">Continue</button></form></main></body></html>`);
    return;
  }
  if (req.method === 'POST' && action === 'login') {
    let body = '';
    for await (const chunk of req) body += chunk;
    const login = new URLSearchParams(body).get('login') ?? '';
    const details = await provider.interactionDetails(req, res);
    if (!people[login]) {
      res.writeHead(400, { 'content-type': 'text/plain' });
      res.end(`no such person: ${login}`);
      return;
    }
    const grant = new provider.Grant({ accountId: login, clientId: details.params.client_id });
    grant.addOIDCScope(details.params.scope);
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { login: { accountId: login }, consent: { grantId } }, { mergeWithLastSubmission: false });
    return;
  }
  res.writeHead(404);
  res.end();
}

const callback = provider.callback();
server.on('request', (req, res) => {
  if (req.url.startsWith('/interaction/')) {
    interaction(req, res).catch((e) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(e));
    });
  } else {
    callback(req, res);
  }
});
provider.on('server_error', (ctx, e) => console.error('provider error:', e));

console.log(JSON.stringify({ issuer }));
