// Which app endpoint a request is for, and whether it is a dummy (cwa-satellites §1.5).

import HTTPTypes

/// The three app-facing endpoints; each has its own timing estimate.
enum AppEndpoint: String, Sendable, CaseIterable {
    case registrationToken = "registration_token"
    case testResult = "test_result"
    case tan
}

/// How a request asked to be treated, from its `cwa-fake` header.
enum FakeMode: Equatable, Sendable {
    /// No header: a real request from a client that predates padding.
    case realWithoutHeader
    /// The header with a value other than `1`: a real request from a padding-aware client.
    case real
    /// `cwa-fake: 1`: a dummy that touches no state.
    case fake

    static let headerName = HTTPField.Name("cwa-fake")!

    init(_ headers: HTTPFields) {
        switch headers[Self.headerName] {
        case nil: self = .realWithoutHeader
        case "1": self = .fake
        default: self = .real
        }
    }

    /// Whether the response carries `responsePadding`; the result poll always does (§1.5).
    func pads(_ endpoint: AppEndpoint) -> Bool {
        endpoint == .testResult || self != .realWithoutHeader
    }
}
