// The NHS app's signed documents (njs, loaded by gateway.conf.template with js_import): distribution-service's
// directory store keeps each one as a single file, its two signature headers, an empty line, then the document
// (Services/Distribution/Publishing/DirectoryStore.swift), so a new document and its signature replace the old pair
// in one rename. This serves the document with those headers, as S3 serves its user metadata (nhs §2):
//
//   X-Amz-Meta-Signature: keyId="…",signature="…"
//   X-Amz-Meta-Signature-Date: Sun, 02 Aug 2020 10:18:44 UTC
//
// Anything else under /distribution/ (a name that is not a document's, a file without the two headers) is 404.
import fs from 'fs';

const SIGNATURE = 'X-Amz-Meta-Signature: ';
const DATE = 'X-Amz-Meta-Signature-Date: ';

function serve(r) {
    const name = r.uri.slice('/distribution/'.length);
    if (!/^[a-z0-9][a-z0-9-]{0,63}$/.test(name)) {
        r.return(404);
        return;
    }
    let file;
    try {
        file = fs.readFileSync(r.variables.document_root + '/distribution/' + name);
    } catch (e) {
        r.return(404);
        return;
    }
    const end = file.indexOf('\n\n');
    const lines = end < 0 ? [] : file.slice(0, end).toString().split('\n');
    if (lines.length !== 2 || !lines[0].startsWith(SIGNATURE) || !lines[1].startsWith(DATE)) {
        r.return(404);
        return;
    }
    r.headersOut['Content-Type'] = 'application/json';
    r.headersOut['Cache-Control'] = 'no-cache';
    r.headersOut['X-Amz-Meta-Signature'] = lines[0].slice(SIGNATURE.length);
    r.headersOut['X-Amz-Meta-Signature-Date'] = lines[1].slice(DATE.length);
    r.return(200, file.slice(end + 2));
}

export default { serve };
