// The callback the gateway calls when it has a new batch (cwa-server §5.5).

import ENFederation
import ENModels
import ENServiceKit
import Foundation
import Hummingbird
import Logging

/// `GET /version/v1/callback?batchTag=…&date=yyyy-MM-dd`: records the batch as unprocessed and wakes the download
/// job; answers 200 with an empty body at once, also for a batch announced before. The route sits behind the client
/// certificate check of the gateway's callback certificate.
struct CallbackController: Sendable {
    let store: any FederationRepository
    let trigger: DownloadTrigger
    let metrics: FederationMetrics
    let clock: WallClock
    /// Announced days older than this (the keys' retention) are refused: their batches would not be kept.
    let retentionDays: Int

    func addRoutes(to group: RouterGroup<CertificateRequestContext>) {
        group.get("version/v1/callback") { request, context in
            try await self.callback(request, context)
        }
    }

    func callback(_ request: Request, _ context: CertificateRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        guard let tag = query["batchTag"].map(String.init), !tag.isEmpty, tag.count <= 64,
            tag.unicodeScalars.allSatisfy({ $0.isASCII && $0.properties.generalCategory != .control })
        else {
            self.metrics.recordCallback("invalid")
            throw APIError(.badRequest, "batchTag must be 1 to 64 printable ASCII characters")
        }
        guard let date = query["date"].map(String.init), let day = FederationProtocol.day(parsing: date) else {
            self.metrics.recordCallback("invalid")
            throw APIError(.badRequest, "date must be a day as yyyy-MM-dd")
        }
        let today = Calendar.utc.startOfDay(for: self.clock.now)
        guard day <= today.addingTimeInterval(86_400),
            day >= today.addingTimeInterval(-Double(self.retentionDays) * 86_400)
        else {
            self.metrics.recordCallback("invalid")
            throw APIError(.badRequest, "date must be a day from \(self.retentionDays) days ago to tomorrow (UTC)")
        }
        try await self.store.announce(tag: tag, day: date)
        self.trigger.pull()
        self.metrics.recordCallback("accepted")
        return Response(status: .ok)
    }
}
