// A real OAuth authorization server for tests/integration/test_auth.sh:
// oidc-provider on 127.0.0.1 (random ports), issuing RFC 9068 JWT access
// tokens (typ at+jwt) on the client_credentials grant for a resource
// indicator, plus a second provider with another issuer and other keys.
//
// Clients rs256, ps256, es256 and eddsa (secret "s3cret-<id>") get tokens
// signed with that algorithm; requests without a resource get opaque tokens.
// POST /__test/rotate on the first provider swaps in a provider with the
// same issuer and new keys (a key rotation); GET /__test/jwks-hits says how
// often its JWKS was fetched; /__test/big-jwks and /__test/redirect-jwks
// serve what a JWKS fetch must refuse.  Tokens no real AS would issue (expired, typ
// JWT, alg none, wrong key, ...) are minted with jose from the provider's own
// key material or a foreign key.
//
// Env: RESOURCE (the resource URL), OUT (where to write the JSON facts once
// listening).  Runs until SIGTERM, or five minutes at most.
import { writeFileSync, renameSync } from 'node:fs';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';
import * as jose from 'jose';

const RESOURCE = process.env.RESOURCE;
const OTHER_RESOURCE = 'https://other.example.com/api';
const OUT = process.env.OUT;
const ALGS = { rs256: 'RS256', ps256: 'PS256', es256: 'ES256', eddsa: 'EdDSA' };

async function keyPair(alg, kid) {
	const { privateKey } = await jose.generateKeyPair(alg === 'PS256' ? 'RS256' : alg,
		{ extractable: true, ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}) });
	const jwk = await jose.exportJWK(privateKey);
	return { ...jwk, kid, use: 'sig' };
}

async function keySet(prefix) {
	// One RSA key serves RS256 and PS256.
	return [
		await keyPair('RS256', `${prefix}-rsa`),
		await keyPair('ES256', `${prefix}-ec`),
		await keyPair('EdDSA', `${prefix}-ed`),
	];
}

function makeProvider(issuer, jwks, resources) {
	const clients = Object.keys(ALGS).map((id) => ({
		client_id: id,
		client_secret: `s3cret-${id}`,
		grant_types: ['client_credentials'],
		redirect_uris: [],
		response_types: [],
		token_endpoint_auth_method: 'client_secret_post',
		scope: 'mail.read mail.write',
	}));
	const provider = new Provider(issuer, {
		clients,
		jwks: { keys: jwks },
		scopes: ['mail.read', 'mail.write'],
		ttl: { ClientCredentials: 600 },
		features: {
			devInteractions: { enabled: false },
			clientCredentials: { enabled: true },
			resourceIndicators: {
				enabled: true,
				defaultResource: () => undefined,
				useGrantedResource: () => false,
				getResourceServerInfo: (ctx, resource, client) => {
					if (!resources.includes(resource)) {
						throw new Provider.errors.InvalidTarget();
					}
					return {
						scope: 'mail.read mail.write',
						audience: resource,
						accessTokenTTL: 3600,
						accessTokenFormat: 'jwt',
						jwt: { sign: { alg: ALGS[client.clientId] } },
					};
				},
			},
		},
	});
	provider.on('server_error', (ctx, err) => console.error('oauth_as: server_error', err));
	return provider;
}

// Listen on a random loopback port first: the issuer must name the port.
function listen(handler) {
	return new Promise((resolve) => {
		const server = createServer((req, res) => handler.fn(req, res));
		server.listen(0, '127.0.0.1', () => resolve(server));
	});
}

const handlerA = { fn: null };
const handlerB = { fn: null };
const serverA = await listen(handlerA);
const serverB = await listen(handlerB);
const issuerA = `http://127.0.0.1:${serverA.address().port}`;
const issuerB = `http://127.0.0.1:${serverB.address().port}`;

const keysA = await keySet('a1');
const keysA2 = await keySet('a2');
const keysB = await keySet('b1');
let providerA = makeProvider(issuerA, keysA, [RESOURCE, OTHER_RESOURCE]);
const providerA2 = makeProvider(issuerA, keysA2, [RESOURCE, OTHER_RESOURCE]);
const providerB = makeProvider(issuerB, keysB, [RESOURCE]);
let jwksHits = 0;

handlerA.fn = (req, res) => {
	if (req.url === '/__test/rotate' && req.method === 'POST') {
		providerA = providerA2;
		res.end('rotated\n');
		return;
	}
	if (req.url === '/__test/jwks-hits') {
		res.end(`${jwksHits}\n`);
		return;
	}
	if (req.url === '/__test/big-jwks') {	// over mcpd's 256 KiB cap
		res.setHeader('Content-Type', 'application/json');
		res.end(JSON.stringify({ keys: [], pad: 'x'.repeat(300 * 1024) }));
		return;
	}
	if (req.url === '/__test/redirect-jwks') {	// redirects are not followed
		res.writeHead(302, { Location: '/jwks' });
		res.end();
		return;
	}
	if (req.url.startsWith('/jwks')) {
		jwksHits++;
	}
	providerA.callback()(req, res);
};
handlerB.fn = (req, res) => providerB.callback()(req, res);

// --- forged tokens ---------------------------------------------------------

const now = Math.floor(Date.now() / 1000);
const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
const claims = (extra = {}) => ({
	iss: issuerA, aud: RESOURCE, sub: 'forged-sub', client_id: 'es256',
	iat: now - 10, exp: now + 3600, scope: 'mail.read', jti: `j${Math.random()}`, ...extra,
});
const ecA = keysA.find((k) => k.kid === 'a1-ec');
const rsaA = keysA.find((k) => k.kid === 'a1-rsa');
const privEcA = await jose.importJWK(ecA, 'ES256');
const foreign = (await jose.generateKeyPair('ES256')).privateKey;

async function signed(payload, header = {}, key = privEcA) {
	return new jose.SignJWT(payload)
		.setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'a1-ec', ...header })
		.sign(key);
}

const rsaPubPem = await jose.exportSPKI(await jose.importJWK(
	{ kty: 'RSA', n: rsaA.n, e: rsaA.e }, 'RS256'));
const forged = {
	// A control: the same minting with nothing wrong must be accepted.
	good: await signed(claims()),
	expired: await signed(claims({ iat: now - 7200, exp: now - 3600 })),
	not_yet_valid: await signed(claims({ nbf: now + 3600, exp: now + 7200 })),
	wrong_iss: await signed(claims({ iss: issuerB })),
	typ_jwt: await signed(claims(), { typ: 'JWT' }),
	no_typ: await signed(claims(), { typ: undefined }),
	alg_none: `${b64({ alg: 'none', typ: 'at+jwt', kid: 'a1-ec' })}.${b64(claims())}.`,
	hs256: await new jose.SignJWT(claims())
		.setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: 'a1-rsa' })
		.sign(new TextEncoder().encode(rsaPubPem)),
	other_key: await signed(claims(), {}, foreign),
	forged_kid: await signed(claims(), { kid: 'no-such-kid' }, foreign),
};

const facts = {
	issuer: issuerA,
	issuer_b: issuerB,
	token_endpoint: `${issuerA}/token`,
	token_endpoint_b: `${issuerB}/token`,
	jwks_uri: `${issuerA}/jwks`,
	other_resource: OTHER_RESOURCE,
	forged,
};
writeFileSync(`${OUT}.tmp`, JSON.stringify(facts, null, 2));
renameSync(`${OUT}.tmp`, OUT);
console.error(`oauth_as: ${issuerA} and ${issuerB} ready`);

const stop = () => {
	serverA.close();
	serverB.close();
	process.exit(0);
};
process.on('SIGTERM', stop);
setTimeout(stop, 300_000).unref();
// Keep running: the servers hold the event loop open.
