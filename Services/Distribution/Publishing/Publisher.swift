// Publishing a built tree to any object store: what to upload, in which order, in parallel, with retries.

import Logging

/// How publishing treats the store (cwa-server §3.8).
struct PublishPolicy: Sendable, Equatable {
    /// Operations in flight at once (`max-number-of-s3-threads`).
    var parallelism = 4
    /// Tries per operation (`retry-attempts`) and the pause between them (`retry-backoff`, doubled at each retry).
    var attempts = 3
    var backoff: Duration = .seconds(2)
    /// More failed operations than this abort the run (`max-number-of-failed-operations`).
    var maxFailedOperations = 5
    /// Rewrite published key files too (`FORCE_UPDATE_KEYFILES`; never in normal operation).
    var forceUpdateKeyFiles = false
}

/// Why publishing stopped.
enum PublishError: Error, CustomStringConvertible {
    case tooManyFailures(Int)
    case incomplete(failed: Int)

    var description: String {
        switch self {
        case .tooManyFailures(let count): "publishing aborted after \(count) failed operations"
        case .incomplete(let failed): "\(failed) objects could not be published; the indexes were left as they were"
        }
    }
}

/// Uploads what changed. Files go first and indexes last, the deepest indexes before the ones naming them (an hour
/// index before its country's index), so an index never names an object that is not there yet, whenever a run
/// stops; when any object failed, the indexes above it are not touched and the run fails, so the next run repairs it.
struct Publisher: Sendable {
    let store: any ObjectStore
    let policy: PublishPolicy
    let logger: Logger

    struct Outcome: Sendable, Equatable {
        var uploaded = 0
        var unchanged = 0
        var deleted = 0
        var bytesUploaded = 0

        mutating func add(_ other: Outcome) {
            self.uploaded += other.uploaded
            self.unchanged += other.unchanged
            self.deleted += other.deleted
            self.bytesUploaded += other.bytesUploaded
        }
    }

    /// Publishes `objects`, given the keys the store holds already.
    func publish(_ objects: [CDNObject], existing: Set<String>) async throws -> Outcome {
        var outcome = Outcome()
        let files = objects.filter { $0.contentType != .json }
        // Indexes by depth, deepest first: each level is published whole before the one above it.
        let levels = Dictionary(grouping: objects.filter { $0.contentType == .json }) { index in
            index.key.utf8.count { $0 == UInt8(ascii: "/") }
        }
        let indexes = levels.keys.sorted(by: >).compactMap { levels[$0] }
        for phase in [files] + indexes {
            let results = try await self.forEach(phase, operation: "put") { object in
                try await self.publishIfChanged(object, exists: existing.contains(object.key))
            }
            for (object, uploaded) in zip(phase, results) {
                if uploaded == true {
                    outcome.uploaded += 1
                    outcome.bytesUploaded += object.body.count
                } else if uploaded == false {
                    outcome.unchanged += 1
                }
            }
            let failed = results.filter { $0 == nil }.count
            if failed > 0 { throw PublishError.incomplete(failed: failed) }
        }
        return outcome
    }

    /// Deletes `keys` (retention); returns how many were deleted.
    func delete(_ keys: [String]) async throws -> Int {
        let results = try await self.forEach(keys, operation: "delete") { key in
            try await self.store.delete(key)
            return true
        }
        let failed = results.filter { $0 == nil }.count
        if failed > 0 { throw PublishError.incomplete(failed: failed) }
        return results.count
    }

    /// Whether the object was uploaded: absent objects are; a published key file never is (unless forced); anything
    /// else is when its `cwa-hash` differs.
    private func publishIfChanged(_ object: CDNObject, exists: Bool) async throws -> Bool {
        if exists {
            if object.isKeyFile && !self.policy.forceUpdateKeyFiles { return false }
            if try await self.store.checksum(of: object.key) == object.checksum { return false }
        }
        try await self.store.put(object)
        return true
    }

    /// Runs `body` for every item, `parallelism` at a time, retrying each failure with backoff. The result of an item
    /// is `nil` when it failed every try; more than `maxFailedOperations` such items abort with an error.
    private func forEach<Item: Sendable>(
        _ items: [Item],
        operation: String,
        _ body: @escaping @Sendable (Item) async throws -> Bool
    ) async throws -> [Bool?] {
        let policy = self.policy
        let logger = self.logger
        var failed = 0
        let countFailures = { (result: Bool?) throws in
            guard result == nil else { return }
            failed += 1
            if failed > policy.maxFailedOperations { throw PublishError.tooManyFailures(failed) }
        }
        return try await boundedMap(items, width: policy.parallelism, check: countFailures) { item in
            var pause = policy.backoff
            for attempt in 1...max(1, policy.attempts) {
                do {
                    return try await body(item)
                } catch is CancellationError {
                    throw CancellationError()
                } catch {
                    logger.warning(
                        "Object store operation failed",
                        metadata: ["operation": "\(operation)", "attempt": "\(attempt)", "error": "\(error)"]
                    )
                    guard attempt < policy.attempts else { break }
                    try await Task.sleep(for: pause)
                    pause = pause * 2
                }
            }
            return nil
        }
    }
}
