import LegacyKit
import Testing
import WorkbookTesting

@testable import Futures

enum PricingError: Error, Equatable, Sendable {
  case noFlights
  case hotelFull
}

/// How a fake price request answers.
private enum Answer: Sendable, CustomStringConvertible {
  /// The price, after `delay`.
  case price(Int, after: Duration = .zero)
  /// An error, after `delay`.
  case failure(PricingError, after: Duration = .zero)
  /// The price, but only once every request of the rendezvous is running.
  case priceWhenAllRunning(Int, Rendezvous)
  /// Nothing until the request is cancelled; if it never is, the price after a second.
  case priceUnlessCancelled(Int)

  var description: String {
    switch self {
    case .price(let price, let delay): "\(price) after \(delay)"
    case .failure(let error, let delay): "\(error) after \(delay)"
    case .priceWhenAllRunning(let price, _): "\(price) once both run"
    case .priceUnlessCancelled(let price): "\(price) unless cancelled"
    }
  }
}

/// A pricing service that answers as told and records what each request went through.
private final class FakePricing: TripPricing {
  struct Log {
    var started: [String] = []
    var running: Set<String> = []
    var cancelled: Set<String> = []
  }

  let flight: Answer
  let hotel: Answer
  let log = Locked(Log())

  init(flight: Answer, hotel: Answer) {
    self.flight = flight
    self.hotel = hotel
  }

  func flightFare(for trip: Trip) async throws -> Int {
    try await answer(flight, as: "flight fare")
  }

  func hotelRate(for trip: Trip) async throws -> Int {
    try await answer(hotel, as: "hotel rate")
  }

  private func answer(_ answer: Answer, as name: String) async throws -> Int {
    log.withLock {
      $0.started.append(name)
      $0.running.insert(name)
    }
    defer { log.withLock { _ = $0.running.remove(name) } }
    do {
      switch answer {
      case .price(let price, let delay):
        try await Task.sleep(for: delay)
        return price
      case .failure(let error, let delay):
        try await Task.sleep(for: delay)
        throw error
      case .priceWhenAllRunning(let price, let rendezvous):
        await rendezvous.arrive()
        return price
      case .priceUnlessCancelled(let price):
        try await Task.sleep(for: .seconds(1))
        return price
      }
    } catch is CancellationError {
      log.withLock { _ = $0.cancelled.insert(name) }
      // A real request takes a moment to hang up once cancelled, and runs until it has:
      // a call that cancels it but does not wait for it returns while it still runs.
      await Task.detached { try? await Task.sleep(for: .milliseconds(300)) }.value
      throw CancellationError()
    }
  }
}

private let lisbon = Trip(destination: "Lisbon", nights: 3)

private let priceHint =
  "tripPrice(for:using:) must return once both prices have arrived"
private let failureHint =
  "when one request fails, tripPrice(for:using:) must throw its error"

/// The contract of `tripPrice(for:using:)`: each path, what the caller and the pricing
/// service see, and the test that checks it (— where a column does not apply, and why).
///
/// | path | result, error | requests (started, running, cancelled) | timing |
/// | --- | --- | --- | --- |
/// | both prices arrive, in either order | their sum: `addsBothPrices` | — | — |
/// | both requests | — | each starts before the other ends: `asksForBothAtOnce` | the longer of the two, not the sum: `asksForBothAtOnce` |
/// | one request fails | its error: `failureEndsBoth` | none still running after the call, though a cancelled request takes 0.3 s to end: `failureEndsBoth` | — the call may first wait for the request it awaits first (`async let` awaits in order) |
/// | one request fails while the other is still on its way | — | the other one cancelled, when the request awaited first fails (a group: whichever fails first); `async let` waits for the one it awaits first, so of the two orders of failure at least one must cancel: `failureCancelsTheOther` | — |
/// | the same trip, another service | that service's sum: `asksEveryTime` | both asked again: `asksEveryTime` | — |
/// | the caller is cancelled before the call | `CancellationError`: `cancelledBeforeTheCall` | none still running after the call: `cancelledBeforeTheCall` | — |
/// | the caller is cancelled | `CancellationError`: `cancellingTheCallerCancelsBoth` | both see it: `cancellingTheCallerCancelsBoth` | — |
/// | cancelled after it returned | — the requests have ended with the call | | |
@Suite("5.3 Two at once")
struct TwoAtOnceTests {
  @Test(
    "Adds the flight fare and the hotel rate, whichever arrives last",
    arguments: [
      (Duration.zero, Duration.zero),
      (.milliseconds(150), .zero),
      (.zero, .milliseconds(150)),
    ])
  func addsBothPrices(flightDelay: Duration, hotelDelay: Duration) async throws {
    let pricing = FakePricing(
      flight: .price(240, after: flightDelay), hotel: .price(315, after: hotelDelay))

    let price = try await withDeadline(.seconds(2), "tripPrice(for:using:)", hint: priceHint) {
      try await tripPrice(for: lisbon, using: pricing)
    }

    #expect(price == 555, "the trip's price is the flight fare plus the hotel rate, 240 + 315")
    #expect(pricing.log.value.started.sorted() == ["flight fare", "hotel rate"])
  }

  @Test("Asks for both prices at once: each request starts before the other has finished")
  func asksForBothAtOnce() async throws {
    let bothRunning = Rendezvous(parties: 2)
    let pricing = FakePricing(
      flight: .priceWhenAllRunning(240, bothRunning),
      hotel: .priceWhenAllRunning(315, bothRunning))

    let price = try await withDeadline(.seconds(2), "tripPrice(for:using:)", hint: priceHint) {
      try await tripPrice(for: lisbon, using: pricing)
    }

    let ranTogether = bothRunning.met
    #expect(
      ranTogether,
      """
      the two requests never ran at the same time: the \(pricing.log.value.started.last ?? "") \
      was only asked for after the \(pricing.log.value.started.first ?? "") had arrived, so \
      the trip takes the sum of both times; start both before awaiting either (async let)
      """)
    #expect(price == 555, "the trip's price is the flight fare plus the hotel rate, 240 + 315")
  }

  @Test(
    "When one request fails, its error is thrown and the other is not left running",
    arguments: [PricingError.noFlights, .hotelFull])
  func failureEndsBoth(expected: PricingError) async throws {
    let failure = Answer.failure(expected, after: .milliseconds(50))
    let pricing =
      expected == .noFlights
      ? FakePricing(flight: failure, hotel: .priceUnlessCancelled(315))
      : FakePricing(flight: .priceUnlessCancelled(240), hotel: failure)

    let outcome = await Result {
      try await withDeadline(.seconds(2), "tripPrice(for:using:)", hint: failureHint) {
        try await tripPrice(for: lisbon, using: pricing)
      }
    }
    switch outcome {
    case .failure(let error as DeadlineExceeded): throw error
    case .failure(let error as PricingError) where error == expected: break
    case .failure(let error):
      Issue.record(
        "when a request fails, tripPrice(for:using:) must throw that request's own error, \(expected), unchanged; it threw \(error)"
      )
    case .success(let price):
      Issue.record(
        "when a request fails, tripPrice(for:using:) must throw its error, not hide it (try?); it returned \(price)"
      )
    }

    let stillRunning = pricing.log.value.running.sorted()
    #expect(
      stillRunning.isEmpty,
      """
      the \(stillRunning.joined(separator: " and ")) request was still running after \
      tripPrice(for:using:) had thrown: child tasks of async let end with the call, \
      unstructured Task { } ones do not
      """)
  }

  @Test("When one request fails, the other is cancelled, not waited for, in one order at least")
  func failureCancelsTheOther() async throws {
    // `async let` waits for the request it awaits first, so it may wait when the other one
    // fails first; but when the one it awaits first fails, leaving the scope cancels the
    // other. An answer that never cancels waits in both orders.
    var waitedFor: [String] = []
    for failing in [PricingError.noFlights, .hotelFull] {
      let failure = Answer.failure(failing, after: .milliseconds(50))
      let (pricing, other) =
        failing == .noFlights
        ? (FakePricing(flight: failure, hotel: .priceUnlessCancelled(315)), "hotel rate")
        : (FakePricing(flight: .priceUnlessCancelled(240), hotel: failure), "flight fare")
      let outcome = await Result {
        try await withDeadline(.seconds(3), "tripPrice(for:using:)", hint: failureHint) {
          try await tripPrice(for: lisbon, using: pricing)
        }
      }
      // What it threw is failureEndsBoth's to judge; here only whether it waited.
      if case .failure(let error as DeadlineExceeded) = outcome { throw error }
      if !pricing.log.value.cancelled.contains(other) { waitedFor.append(other) }
    }
    #expect(
      waitedFor.count < 2,
      """
      when the flight fare failed, tripPrice(for:using:) still waited for the hotel rate to \
      arrive, and when the hotel rate failed, for the flight fare: it never cancelled the \
      request still on its way, though its answer could only be thrown away; collecting \
      every outcome before throwing (a group of Results, waitForAll) waits for them all
      """)
  }

  @Test("Each call asks the pricing service it is given, for that trip, every time")
  func asksEveryTime() async throws {
    let cheap = FakePricing(flight: .price(99), hotel: .price(120))
    let dear = FakePricing(flight: .price(410), hotel: .price(600))

    let first = try await withDeadline(.seconds(2), "tripPrice(for:using:)", hint: priceHint) {
      try await tripPrice(for: lisbon, using: cheap)
    }
    let second = try await withDeadline(.seconds(2), "tripPrice(for:using:)", hint: priceHint) {
      try await tripPrice(for: lisbon, using: dear)
    }

    #expect(
      (first, second) == (219, 1_010) && dear.log.value.started.count == 2,
      "the same trip priced with two services gave \(first) and \(second), not 219 and 1010: every call asks its service for the current fare and rate; nothing is kept from one call for the next"
    )
  }

  @Test("A caller cancelled before the call throws CancellationError and leaves no request running")
  func cancelledBeforeTheCall() async throws {
    let pricing = FakePricing(flight: .priceUnlessCancelled(240), hotel: .priceUnlessCancelled(315))
    let caller = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await tripPrice(for: lisbon, using: pricing)
    }
    let result = try await withDeadline(
      .seconds(2), "tripPrice(for:using:) called from a task already cancelled",
      hint: "the requests did not see the caller's cancellation"
    ) {
      await caller.result
    }
    let running = pricing.log.value.running

    #expect(throws: CancellationError.self) { try result.get() }
    #expect(
      running.isEmpty,
      "tripPrice returned while \(running.sorted()) still ran: a request made from a task the call does not own runs on after the call, for nobody"
    )
  }

  @Test("Cancelling the caller cancels both requests")
  func cancellingTheCallerCancelsBoth() async throws {
    let pricing = FakePricing(flight: .priceUnlessCancelled(240), hotel: .priceUnlessCancelled(315))
    let caller = Task { try await tripPrice(for: lisbon, using: pricing) }
    let bothStarted = await eventually { pricing.log.value.started.count == 2 }

    caller.cancel()
    let result = try await withDeadline(
      .seconds(2), "tripPrice(for:using:) after its task was cancelled",
      hint: "the requests did not see the caller's cancellation"
    ) {
      await caller.result
    }

    #expect(bothStarted, "both requests should be running before either has an answer")
    #expect(throws: CancellationError.self) { try result.get() }
    #expect(
      pricing.log.value.cancelled == ["flight fare", "hotel rate"],
      "both requests must see the caller's cancellation; unstructured Task { } ones do not")
  }
}
