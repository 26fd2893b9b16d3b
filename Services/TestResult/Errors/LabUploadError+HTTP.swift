// Lab and lookup validation failures as HTTP responses.

import ENServiceKit
import HTTPTypes

extension LabUploadError: APIErrorConvertible {
    var apiError: APIError { APIError(.badRequest, self.message) }
}
