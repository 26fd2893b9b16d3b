// Where NHS mobile analytics go once validated and merged (nhs §10): the submission day, never its time, and nothing
// that names the device or the submitter.

/// Each store is one step: a submission is kept whole or not at all.
protocol NHSAnalyticsRepository: Sendable {
    /// A daily packet, submitted on `day` (`YYYY-MM-DD`).
    func store(_ packet: NHSAnalyticsPacket, day: String) async throws
    /// Every event of an events submission, submitted on `day`.
    func store(_ submission: NHSAnalyticsEvents, day: String) async throws
}
