// Work over many items with a bounded number in flight, for signing (one per core) and object-store calls.

/// The results of `body` for every item, in item order, with at most `width` calls running at once. `check` sees
/// each result as it arrives; when it throws, the remaining work is cancelled and its error is thrown.
func boundedMap<Item: Sendable, Output: Sendable>(
    _ items: [Item],
    width: Int,
    check: (Output) throws -> Void = { _ in },
    _ body: @escaping @Sendable (Item) async throws -> Output
) async throws -> [Output] {
    try await withThrowingTaskGroup(of: (Int, Output).self) { group in
        var results = [Output?](repeating: nil, count: items.count)
        var next = 0
        func start() {
            guard next < items.count else { return }
            let index = next
            let item = items[index]
            next += 1
            group.addTask { (index, try await body(item)) }
        }
        for _ in 0..<max(1, width) { start() }
        while let (index, output) = try await group.next() {
            results[index] = output
            do {
                try check(output)
            } catch {
                group.cancelAll()
                throw error
            }
            start()
        }
        return results.compactMap { $0 }
    }
}
