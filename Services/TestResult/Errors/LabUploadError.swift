// Why a lab batch or a lookup was refused.

/// Why a batch or lookup was refused; each case names the field and the rule, never the value.
enum LabUploadError: Error, Equatable {
    case missing(String)
    case noResults
    case tooManyResults(max: Int)
    case invalidID(path: String)
    case resultNotAllowed(path: String, allowed: ClosedRange<Int>)
    case sampleTimeOutOfRange(path: String)
    case invalidLabID
    /// The body names another lab than the client certificate does.
    case labIDNotCertificates
    /// An id of the batch holds a result another lab uploaded (the whole batch is refused).
    case ownedByAnotherLab

    var message: String {
        switch self {
        case .missing(let path): "\(path) is required"
        case .noResults: "testResults must not be empty"
        case .tooManyResults(let max): "testResults has more than \(max) entries"
        case .invalidID(let path): "\(path) must be 64 hex characters (a SHA-256 hash; the first may be x)"
        case .resultNotAllowed(let path, let allowed):
            "\(path) must be between \(allowed.lowerBound) and \(allowed.upperBound) for this test type"
        case .sampleTimeOutOfRange(let path):
            "\(path) must be Unix epoch seconds between 2020-01-01 and one hour from now"
        case .invalidLabID: "labId must be 1 to 64 printable characters"
        case .labIDNotCertificates: "labId must be the lab of the client certificate, or absent"
        case .ownedByAnotherLab: "a result of this batch belongs to another lab; nothing was stored"
        }
    }
}
