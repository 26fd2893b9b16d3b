// NHS mobile analytics in memory, for route tests and local runs without a database.

/// What `PostgresNHSAnalyticsRepository` stores, as lists guarded by the actor.
actor InMemoryNHSAnalyticsRepository: NHSAnalyticsRepository {
    /// The packets stored, with their submission day.
    private(set) var packets: [(day: String, packet: NHSAnalyticsPacket)] = []
    /// The events stored, one entry per event, with the submission's metadata and day.
    private(set) var events: [(day: String, metadata: NHSAnalyticsMetadata, event: NHSAnalyticsEvent)] = []

    init() {}

    func store(_ packet: NHSAnalyticsPacket, day: String) {
        self.packets.append((day, packet))
    }

    func store(_ submission: NHSAnalyticsEvents, day: String) {
        self.events += submission.events.map { (day, submission.metadata, $0) }
    }

    /// The retention pass: drops what was submitted before `day` (`YYYY-MM-DD`); how many packets and events went.
    func deleteSubmitted(before day: String) -> (packets: Int, events: Int) {
        let packets = self.packets.count
        let events = self.events.count
        self.packets.removeAll { $0.day < day }
        self.events.removeAll { $0.day < day }
        return (packets - self.packets.count, events - self.events.count)
    }
}
