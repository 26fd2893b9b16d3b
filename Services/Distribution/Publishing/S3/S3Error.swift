// Why an S3 operation failed; never carries credentials or signatures.

/// A failed S3 operation. The publisher retries and counts these; a missing bucket fails the run.
enum S3Error: Error, CustomStringConvertible, Equatable {
    /// The bucket does not exist (the reference fails the run when it is missing, cwa-server §3.8).
    case bucketMissing(String)
    /// S3 answered `status` to `operation` (`put`, `head`, `delete`, `list`, `head-bucket`) on `key` (the prefix for
    /// `list`, empty for the bucket); `code` is the `<Code>` of the XML error body, if there was one.
    case unexpectedStatus(operation: String, key: String, status: UInt, code: String? = nil)
    /// A success answer that could not be used, such as a truncated listing without a continuation token.
    case invalidResponse(operation: String, key: String, reason: String)
    /// The endpoint, bucket and key do not make a URL.
    case invalidURL(String)

    var description: String {
        switch self {
        case .bucketMissing(let bucket):
            "S3 bucket '\(bucket)' does not exist; create it before publishing"
        case .unexpectedStatus(let operation, let key, let status, let code):
            "S3 \(operation) '\(key)' answered \(status)" + (code.map { " (\($0))" } ?? "")
        case .invalidResponse(let operation, let key, let reason):
            "S3 \(operation) '\(key)' gave an unusable answer: \(reason)"
        case .invalidURL(let url):
            "not a valid S3 URL: \(url)"
        }
    }
}
