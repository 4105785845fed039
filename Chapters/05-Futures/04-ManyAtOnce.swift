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
  // TODO: Return every hotel's rate, in the order of `hotels`, asking for all of them at
  // once. The first failure, in time, ends the call and cancels the requests still running.
  throw Unfinished()
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
