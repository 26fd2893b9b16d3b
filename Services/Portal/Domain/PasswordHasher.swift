// bcrypt off the cooperative thread pool: one verification at cost 12 takes about a quarter of a second.

import HummingbirdBcrypt
import NIOPosix

/// Runs bcrypt on NIO's blocking-work thread pool, so logins do not stall the threads that serve other requests.
enum PasswordHasher {
    static func verify(_ password: String, hash: String) async throws -> Bool {
        try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(password, hash: hash) }
    }

    static func hash(_ password: String, cost: Int) async throws -> String {
        try await NIOThreadPool.singleton.runIfActive { Bcrypt.hash(password, cost: UInt8(cost)) }
    }
}
