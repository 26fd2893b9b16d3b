// A call to a peer service keeps to the request's deadline, as the request's database work does.

import ENPersistence
import ENServiceKit
import ENTestSupport
import Hummingbird
import Logging
import Testing

@Suite("Upstream client")
struct UpstreamClientTests {
    @Test("a lookup stops at the request's deadline: a peer that hangs is asked once, not once and twice again")
    func deadline() async throws {
        let calls = Mutexed(0)
        let released = Mutexed(false)
        let router = Router()
        router.get("lookup") { _, _ -> Response in
            calls.withLock { $0 += 1 }
            // A peer behind a database that stopped answering: it hangs until the test is over (at most 30 s).
            for _ in 0..<3000 where !released.withLock({ $0 }) {
                try? await Task.sleep(for: .milliseconds(10))
            }
            return Response(status: .ok)
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await LiveServer.run(app) { port in
            // The defaults: 2 s to connect and 5 s to read per attempt, and 2 repeats of a failed lookup.
            var policy = UpstreamPolicy()
            policy.backoff = .milliseconds(1)
            let client = UpstreamClient(
                peer: "peer-service",
                policy: policy,
                serviceToken: TestServiceKeys.signer("caller-service"),
                logger: Logger(label: "test")
            )
            let failure = await DatabasePool.$deadline.withValue(.now + .milliseconds(300)) {
                () async -> UpstreamUnavailable? in
                do throws(UpstreamUnavailable) {
                    _ = try await client.get("http://127.0.0.1:\(port)/lookup")
                    return nil
                } catch {
                    return error
                }
            }
            released.withLock { $0 = true }
            try await client.shutdown()
            #expect(failure?.description == "no answer within the request's deadline")
            #expect(calls.withLock { $0 } == 1, "no repeat after the deadline")
        }
    }
}
