// Lab and lookup validation failures as HTTP responses.

import ENServiceKit
import HTTPTypes

extension LabUploadError: APIErrorConvertible {
    var apiError: APIError {
        switch self {
        case .labIDNotCertificates: APIError(.forbidden, self.message)
        case .ownedByAnotherLab: APIError(.conflict, self.message)
        default: APIError(.badRequest, self.message)
        }
    }
}
