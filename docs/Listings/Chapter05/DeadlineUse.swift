// Chapter 5, exercise 5.5: a deadline can only cancel the wait, so the wait must pass the
// cancellation on to whatever it waits for.
struct Quote: Sendable { var price: Double }
struct TimeoutError: Error {}

// listing: hide
func withTimeout<Value: Sendable>(
  _ limit: Duration, operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
  try await withThrowingTaskGroup(of: Value.self) { group in
    group.addTask { try await operation() }
    group.addTask {
      try await Task.sleep(for: limit)
      throw TimeoutError()
    }
    defer { group.cancelAll() }
    return try await group.next()!
  }
}
// listing: show

final class QuoteService: Sendable {
  func latest(for symbol: String) async throws -> Quote {
    try await Task.sleep(for: .milliseconds(symbol.count * 100))  // stops when cancelled
    return Quote(price: 12.5)
  }
}

func latestQuote(from quotes: QuoteService) async throws -> Quote {
  // listing: deadline
  let quote = try await withTimeout(.seconds(2)) {
    try await quotes.latest(for: "ACME")  // must end promptly when cancelled
  }
  // listing: end
  return quote
}
