// The SHA-256 of the verified client certificate's DER, as 64 lowercase hex characters: the X-SSL-Client-SHA256
// the real gateway's load balancer sends (nginx itself offers only a SHA-1 fingerprint).
import crypto from 'crypto';

function sha256(r) {
    const pem = r.variables.ssl_client_raw_cert;
    if (!pem) {
        return '';
    }
    const body = pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
    return crypto.createHash('sha256').update(Buffer.from(body, 'base64')).digest('hex');
}

export default { sha256 };
