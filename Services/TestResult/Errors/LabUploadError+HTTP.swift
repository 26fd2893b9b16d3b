// Lab and lookup validation failures as HTTP responses.

import ENServiceKit
import HTTPTypes
import Hummingbird

extension LabUploadError: HTTPResponseError {
    var status: HTTPResponse.Status { .badRequest }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        try APIError(self.status, self.message).response(from: request, context: context)
    }
}
