// Check-ins as a publisher reads them back.

/// An encrypted check-in report as stored by submission.
package struct StoredCheckInReport: Sendable, Equatable {
    package var locationIDHash: [UInt8]
    package var initializationVector: [UInt8]
    package var encryptedCheckInRecord: [UInt8]
    package var mac: [UInt8]
    package var submissionHour: Int64

    package init(
        locationIDHash: [UInt8],
        initializationVector: [UInt8],
        encryptedCheckInRecord: [UInt8],
        mac: [UInt8],
        submissionHour: Int64
    ) {
        self.locationIDHash = locationIDHash
        self.initializationVector = initializationVector
        self.encryptedCheckInRecord = encryptedCheckInRecord
        self.mac = mac
        self.submissionHour = submissionHour
    }
}

/// An unencrypted check-in as stored by submission (deprecated, v1 packages).
package struct StoredTraceWarning: Sendable, Equatable {
    package var locationIDHash: [UInt8]
    package var startIntervalNumber: UInt32
    package var period: UInt32
    package var transmissionRiskLevel: UInt32
    package var submissionHour: Int64

    package init(
        locationIDHash: [UInt8],
        startIntervalNumber: UInt32,
        period: UInt32,
        transmissionRiskLevel: UInt32,
        submissionHour: Int64
    ) {
        self.locationIDHash = locationIDHash
        self.startIntervalNumber = startIntervalNumber
        self.period = period
        self.transmissionRiskLevel = transmissionRiskLevel
        self.submissionHour = submissionHour
    }
}
