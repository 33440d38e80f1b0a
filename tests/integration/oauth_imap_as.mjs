// A real OAuth authorization server for syncd's IMAP login
// (tests/integration/test_syncd_oauth.sh): oidc-provider on 127.0.0.1 (a
// random port) with the device authorization grant (RFC 8628), refresh
// tokens with rotation on, revocation, and token introspection (RFC 7662),
// which Dovecot's oauth2 passdb calls to check the tokens syncd logs in with.
//
// Clients: "imap-mcp" (client_secret_post, secret CLIENT_SECRET; device and
// refresh grants), "dovecot" (client_secret_basic, secret DOVECOT_SECRET;
// only introspects).  Access tokens are opaque and live ACCESS_TTL seconds.
//
// The person in the device flow is played by the test over HTTP:
//	POST /__test/approve?user_code=X&account=A	what the verification page does on "yes"
//	POST /__test/deny?user_code=X			... on "no"
//	POST /__test/revoke-access			every access token issued so far dies
//	POST /__test/revoke-refresh			every refresh token dies (the grant is revoked)
//	POST /__test/ttl?access=N			access tokens issued from now on live N seconds
//	GET  /__test/tokens				{ access: [...], refresh: [...], refresh_grants: n,
//							  token_posts: n }
// Env: OUT (JSON facts written once listening), CLIENT_SECRET, DOVECOT_SECRET,
// ACCESS_TTL (seconds, default 3600).  Runs until SIGTERM, or ten minutes at most.
import { writeFileSync, renameSync } from 'node:fs';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const OUT = process.env.OUT;
let accessTtl = Number(process.env.ACCESS_TTL || 3600);

const handler = { fn: null };
const server = await new Promise((resolve) => {
	const s = createServer((req, res) => handler.fn(req, res));
	s.listen(0, '127.0.0.1', () => resolve(s));
});
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
	clients: [
		{
			client_id: 'imap-mcp',
			client_secret: process.env.CLIENT_SECRET,
			grant_types: ['refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
			redirect_uris: [],
			response_types: [],
			token_endpoint_auth_method: 'client_secret_post',
		},
		{
			client_id: 'dovecot',
			client_secret: process.env.DOVECOT_SECRET,
			grant_types: [],
			redirect_uris: [],
			response_types: [],
			token_endpoint_auth_method: 'client_secret_basic',
		},
	],
	scopes: ['openid', 'offline_access', 'imap'],
	ttl: {
		AccessToken: () => accessTtl,
		DeviceCode: 600,
		RefreshToken: 86400,
		Grant: 86400,
	},
	rotateRefreshToken: true,
	issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
	features: {
		devInteractions: { enabled: false },
		deviceFlow: { enabled: true },
		introspection: { enabled: true },
		revocation: { enabled: true },
	},
});
provider.on('server_error', (ctx, err) => console.error('oauth_imap_as: server_error', err));

const issued = { access: [], refresh: [], refresh_grants: 0, token_posts: 0 };
provider.on('access_token.saved', (t) => issued.access.push(t.jti));
provider.on('refresh_token.saved', (t) => issued.refresh.push(t.jti));
provider.on('grant.success', (ctx) => {
	if (ctx.oidc.params.grant_type === 'refresh_token') issued.refresh_grants++;
});
provider.on('grant.error', (ctx, err) => console.error('oauth_imap_as: grant error', err.message));

// What the device verification page does once the person said yes or no.
async function decide(userCode, account, yes) {
	const code = await provider.DeviceCode.findByUserCode(
		userCode.toUpperCase().replace(/\W/g, ''));
	if (!code) return 404;
	if (!yes) {
		Object.assign(code, { error: 'access_denied', errorDescription: 'End-User denied' });
		await code.save();
		return 200;
	}
	const grant = new provider.Grant({ accountId: account, clientId: code.clientId });
	grant.addOIDCScope('openid offline_access');
	const grantId = await grant.save();
	Object.assign(code, {
		accountId: account,
		authTime: Math.floor(Date.now() / 1000),
		grantId,
		scope: 'openid offline_access',
	});
	await code.save();
	return 200;
}

handler.fn = async (req, res) => {
	const url = new URL(req.url, issuer);
	try {
		if (url.pathname === '/__test/approve' || url.pathname === '/__test/deny') {
			res.statusCode = await decide(url.searchParams.get('user_code') || '',
				url.searchParams.get('account') || 'alice', url.pathname === '/__test/approve');
			res.end();
			return;
		}
		if (url.pathname === '/__test/revoke-access') {
			for (const jti of issued.access) {
				const t = await provider.AccessToken.find(jti);
				if (t) await t.destroy();
			}
			res.end('revoked\n');
			return;
		}
		if (url.pathname === '/__test/revoke-refresh') {
			for (const jti of issued.refresh) {
				const t = await provider.RefreshToken.find(jti);
				if (t) await t.destroy();
			}
			res.end('revoked\n');
			return;
		}
		if (url.pathname === '/__test/ttl') {
			accessTtl = Number(url.searchParams.get('access'));
			res.end(`${accessTtl}\n`);
			return;
		}
		if (url.pathname === '/__test/tokens') {
			res.setHeader('Content-Type', 'application/json');
			res.end(JSON.stringify(issued));
			return;
		}
	} catch (e) {
		console.error('oauth_imap_as:', e);
		res.statusCode = 500;
		res.end();
		return;
	}
	if (url.pathname === '/token' && req.method === 'POST') {
		// Every token request, refreshes and device polls alike.
		issued.token_posts++;
	}
	provider.callback()(req, res);
};

const facts = {
	issuer,
	token_endpoint: `${issuer}/token`,
	device_endpoint: `${issuer}/device/auth`,
	introspection_endpoint: `${issuer}/token/introspection`,
	revocation_endpoint: `${issuer}/token/revocation`,
};
writeFileSync(`${OUT}.tmp`, JSON.stringify(facts, null, 2));
renameSync(`${OUT}.tmp`, OUT);
console.error(`oauth_imap_as: ${issuer} ready`);

const stop = () => {
	server.close();
	process.exit(0);
};
process.on('SIGTERM', stop);
setTimeout(stop, 600_000).unref();
