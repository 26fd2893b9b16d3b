// Which realm roles may create which teleTAN type.

/// The rule of the reference (cwa-satellites §1.4), with its hole closed: there, a caller who sends
/// `X-CWA-TELETAN-TYPE: TEST` explicitly needs only *some* teleTAN role, so an event-only user could create TEST
/// teleTANs. Here the type decides: TEST needs `c19hotline` or `c19healthauthority`, EVENT needs
/// `c19hotline_event`, whether the type was sent or defaulted.
enum TeleTANAuthorization {
    static let hotline = "c19hotline"
    static let healthAuthority = "c19healthauthority"
    static let eventHotline = "c19hotline_event"

    static func permits(roles: Set<String>, type: TeleTANType) -> Bool {
        switch type {
        case .test: roles.contains(Self.hotline) || roles.contains(Self.healthAuthority)
        case .event: roles.contains(Self.eventHotline)
        }
    }
}
