// The coroutine way: making a future starts its work, so both requests run side by side,
// and the coroutine then blocks on each in turn.
//
//     func tripPrice(for trip: Trip) -> CoFuture<Int> {
//       DispatchQueue.global().coroutineFuture {
//         let flight = fares.flightFare(for: trip)  // running from here
//         let hotel = fares.hotelRate(for: trip)    // running from here, too
//         return try flight.await() + hotel.await()
//       }
//     }
//
// The pricing service has been migrated already: its methods are `async` now. An async
// function, unlike a future, starts only when it is awaited.

/// A journey to price: a return flight to `destination` and `nights` in a hotel there.
struct Trip: Hashable, Sendable {
  var destination: String
  var nights: Int
}

/// Where prices come from. Its methods used to return `CoFuture<Int>`.
protocol TripPricing: Sendable {
  /// The return flight's fare, in euros.
  func flightFare(for trip: Trip) async throws -> Int
  /// The hotel's rate for the whole stay, in euros.
  func hotelRate(for trip: Trip) async throws -> Int
}

/// The trip's price: the flight fare plus the hotel rate, both asked for at once, so it takes
/// as long as the slower of the two, not as long as both together.
func tripPrice(for trip: Trip, using pricing: some TripPricing) async throws -> Int {
  // TODO: Return the flight fare plus the hotel rate, asking for both at the same time.
  // Cancelling the caller cancels both requests.
  throw Unfinished()
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
