// Failed tests show what PostgreSQL (or the client) said, not PSQLError's deliberately generic description.

public import PostgresNIO
public import Testing

/// PSQLError's description hides the server's message and the failing step to keep them out of service logs;
/// in a test report they are what one needs ("Caught error: …" prints this).
extension PSQLError: @retroactive CustomTestStringConvertible {
    public var testDescription: String { String(reflecting: self) }
}
