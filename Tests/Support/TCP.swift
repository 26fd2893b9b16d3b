// Whether a loopback port accepts connections, without an HTTP client's connection pool and retries in between.

import Foundation

package enum TCP {
    /// Opens and closes one connection to `127.0.0.1:port`. Loopback refuses at once when nothing listens, so this
    /// is what a test waits on to see a listener close (AsyncHTTPClient retries a refused connect until its deadline).
    package static func accepts(port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0
    }
}
