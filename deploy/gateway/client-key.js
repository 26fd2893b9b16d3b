// The key of the gateway's per-client rate limits (njs, loaded by gateway.conf.template with js_import): an
// HMAC-SHA-256 of the client's address under $gateway_client_key, a random key made anew at every start of the
// gateway (deploy/gateway/render.sh for `make run`, client-key.envsh in the containers) that exists only in the
// rendered configuration and nginx's memory. nginx keeps the result in the shared memory of the limit_req zones and
// nowhere else: no log format, header or file names $gateway_client (make deploy-check checks the template).
//
// IPv6 clients are keyed by their /64: a phone or laptop gets a whole /64 and can pick a new address in it at will.
// IPv4 clients are keyed by their address (behind a carrier-grade NAT many phones share one: see deploy/README.md,
// "The gateway", for what the budgets allow for that).
import crypto from 'crypto';

// The part of an address that names one client: an IPv4 address, or the first four groups of an IPv6 address.
function network(address) {
    if (address.indexOf(':') < 0) {
        return address;
    }
    const mapped = address.match(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i);
    if (mapped) {
        return mapped[1];
    }
    const halves = address.split('::');
    const head = halves[0] ? halves[0].split(':') : [];
    const tail = halves.length > 1 && halves[1] ? halves[1].split(':') : [];
    const zeros = new Array(Math.max(0, 8 - head.length - tail.length)).fill('0');
    return head.concat(zeros, tail).slice(0, 4).map(function (group) {
        return parseInt(group, 16).toString(16);
    }).join(':') + '::/64';
}

// 22 base64url characters (132 bits) of the HMAC: short keys keep more clients in a zone, and collisions stay out
// of reach.
function key(r) {
    return crypto.createHmac('sha256', r.variables.gateway_client_key)
        .update(network(r.remoteAddress))
        .digest('base64url')
        .slice(0, 22);
}

export default { key, network };
