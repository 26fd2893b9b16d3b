// Where the S3-compatible bucket of the CDN tree is and how to reach it (cwa-server §3.8).

/// The bucket the distribution publishes to. Requests are path-style: `<endpoint>/<bucket>/<key>`.
struct S3Configuration: Sendable, Equatable, CustomStringConvertible {
    /// Scheme, host and port of the S3 API, e.g. `http://127.0.0.1:9000` (a trailing `/` is ignored).
    var endpoint: String
    /// The bucket; it must exist before a run (the reference's `CWA_OBJECTSTORE_BUCKET`, default `cwa`).
    var bucket: String
    /// The region signatures are scoped to (`us-east-1` for most S3-compatible servers).
    var region: String
    var accessKeyID: String
    var secretAccessKey: String
    /// Sends `x-amz-acl: public-read` with every PUT (the reference's `set-public-read-acl-on-put-object`).
    var publicReadACL: Bool
    /// The longest one request may take, answer body included.
    var requestTimeout: Duration

    /// Never shows the secret key.
    var description: String {
        "S3Configuration(endpoint: \(self.endpoint), bucket: \(self.bucket), region: \(self.region), "
            + "accessKeyID: \(self.accessKeyID), secretAccessKey: <redacted>, publicReadACL: \(self.publicReadACL), "
            + "requestTimeout: \(self.requestTimeout))"
    }
}
