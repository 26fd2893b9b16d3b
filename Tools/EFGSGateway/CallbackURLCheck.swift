// What a callback URL must be before the gateway calls it (cwa-satellites §5.5).

import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// https, no query, a host that resolves, and (unless `allowPrivate`, for rehearsals on one machine) no address in a
/// private, loopback, shared or link-local range.
struct CallbackURLCheck: Sendable {
    let allowPrivate: Bool

    func problem(with text: String) async -> String? {
        guard let url = URLComponents(string: text), url.scheme == "https", let host = url.host, !host.isEmpty else {
            return "the callback url must be an https URL"
        }
        guard url.query == nil else { return "the callback url must have no query" }
        let addresses = Self.resolve(host)
        guard !addresses.isEmpty else { return "the callback url's host does not resolve" }
        if !self.allowPrivate, addresses.contains(where: Self.isPrivate) {
            return "the callback url's host is in a private address range"
        }
        return nil
    }

    /// The IPv4 and IPv6 addresses of `host`, as text.
    static func resolve(_ host: String) -> [String] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else { return [] }
        defer { freeaddrinfo(first) }
        var addresses: [String] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(
                entry.pointee.ai_addr,
                entry.pointee.ai_addrlen,
                &buffer,
                socklen_t(buffer.count),
                nil,
                0,
                NI_NUMERICHOST
            ) == 0 {
                addresses.append(
                    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                )
            }
            cursor = entry.pointee.ai_next
        }
        return addresses
    }

    /// 10/8, 127/8, 100.64/10, 169.254/16, 172.16/12, 192.168/16, ::1 and fc00::/7.
    static func isPrivate(_ address: String) -> Bool {
        if address.contains(":") {
            let lower = address.lowercased()
            return lower == "::1" || lower.hasPrefix("fc") || lower.hasPrefix("fd")
        }
        let octets = address.split(separator: ".").compactMap { Int($0) }
        guard octets.count == 4 else { return true }
        switch (octets[0], octets[1]) {
        case (10, _), (127, _): return true
        case (100, 64...127): return true
        case (169, 254): return true
        case (172, 16...31): return true
        case (192, 168): return true
        default: return false
        }
    }
}
