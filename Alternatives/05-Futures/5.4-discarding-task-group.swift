// The coroutine way: make every future first (each starts its request), then block on them
// one by one, in order.
//
//     func nightlyRates(at hotels: [Hotel]) -> CoFuture<[Int]> {
//       DispatchQueue.global().coroutineFuture {
//         let futures = hotels.map { rates.nightlyRate(at: $0) }  // all running
//         return try futures.map { try $0.await() }
//       }
//     }
//
// When one of them fails, the coroutine throws, and the others go on running for nobody.

/// A hotel whose rate can be asked for.
struct Hotel: Hashable, Sendable {
  var name: String
}

/// Where nightly rates come from. Its method used to return `CoFuture<Int>`.
protocol RateService: Sendable {
  /// The price of one night at `hotel`, in euros.
  func nightlyRate(at hotel: Hotel) async throws -> Int
}

/// Each hotel's nightly rate, in the order of `hotels`, all asked for at once.
///
/// The first failure is thrown, and the requests still running are cancelled.
func nightlyRates(at hotels: [Hotel], using service: some RateService) async throws -> [Int] {
  // Each child stores its rate at its own index; a discarding group keeps no results, and
  // the first error thrown by a child cancels the others and is rethrown.
  let collected = CollectedRates(count: hotels.count)
  try await withThrowingDiscardingTaskGroup { group in
    for (index, hotel) in hotels.enumerated() {
      group.addTask {
        let rate = try await service.nightlyRate(at: hotel)
        await collected.store(rate, at: index)
      }
    }
  }
  return await collected.rates
}

/// The rates so far, each at its hotel's index.
private actor CollectedRates {
  var rates: [Int]

  init(count: Int) {
    rates = Array(repeating: 0, count: count)
  }

  func store(_ rate: Int, at index: Int) {
    rates[index] = rate
  }
}
