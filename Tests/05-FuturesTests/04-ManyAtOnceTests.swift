import LegacyKit
import Testing
import WorkbookTesting

@testable import Futures

private enum RateError: Error, Equatable {
  case soldOut
  case closedForWinter
}

/// How a fake rate request answers.
private enum Answer: Sendable {
  /// The rate, after `delay`.
  case rate(Int, after: Duration = .zero)
  /// An error, after `delay`.
  case failure(RateError, after: Duration = .zero)
  /// The rate, but only once every request of the rendezvous is running.
  case rateWhenAllRunning(Int, Rendezvous)
  /// Nothing until the request is cancelled; if it never is, the rate after a second.
  case rateUnlessCancelled(Int)
  /// The rate, once the request for `hotel` has finished; at once if that request has not
  /// started within 200 ms (so requests made one after another still end).
  case rateAfter(Int, hotel: String)
  /// The error to the hotel's first request; the rate to any request after it.
  case failsTheFirstTime(RateError, then: Int)
  /// Nothing until the request is cancelled, and then an error of its own, as URLSession
  /// answers a cancelled request with `URLError(.cancelled)`; the rate after a second.
  case ownErrorWhenCancelled(RateError, else: Int)
  /// Like `rateUnlessCancelled`, but once cancelled it takes 150 ms to wind down (closing a
  /// connection, say) before it ends.
  case slowToStop(Int)
}

/// A rate service that answers for each hotel as told and records each request.
private final class FakeRates: RateService {
  struct Log {
    var started: [String] = []
    var running: Set<String> = []
    var cancelled: Set<String> = []
    var finished: Set<String> = []
  }

  let answers: [String: Answer]
  let log = Locked(Log())

  init(_ answers: [String: Answer]) {
    self.answers = answers
  }

  func nightlyRate(at hotel: Hotel) async throws -> Int {
    let name = hotel.name
    let askedBefore = log.withLock {
      let asked = $0.started.contains(name)
      $0.started.append(name)
      $0.running.insert(name)
      return asked
    }
    defer {
      log.withLock {
        $0.running.remove(name)
        $0.finished.insert(name)
      }
    }
    do {
      switch answers[name] ?? .rate(0) {
      case .rate(let rate, let delay):
        try await Task.sleep(for: delay)
        return rate
      case .failure(let error, let delay):
        try await Task.sleep(for: delay)
        throw error
      case .rateWhenAllRunning(let rate, let rendezvous):
        await rendezvous.arrive()
        return rate
      case .rateUnlessCancelled(let rate):
        try await Task.sleep(for: .seconds(1))
        return rate
      case .failsTheFirstTime(let error, let rate):
        if askedBefore { return rate }
        throw error
      case .ownErrorWhenCancelled(let own, let rate):
        do {
          try await Task.sleep(for: .seconds(1))
        } catch {
          log.withLock { _ = $0.cancelled.insert(name) }
          throw own
        }
        return rate
      case .slowToStop(let rate):
        do {
          try await Task.sleep(for: .seconds(1))
        } catch {
          // Cancelled now; winding down, which no cancel hurries.
          log.withLock { _ = $0.cancelled.insert(name) }
          await Task.detached { try? await Task.sleep(for: .milliseconds(150)) }.value
          throw error
        }
        return rate
      case .rateAfter(let rate, let other):
        let clock = ContinuousClock()
        let start = clock.now
        while true {
          let (started, done) = log.withLock {
            ($0.started.contains(other), $0.finished.contains(other))
          }
          let waited = clock.now - start
          if done || (!started && waited > .milliseconds(200)) || waited > .seconds(1) { break }
          try await Task.sleep(for: .milliseconds(2))
        }
        return rate
      }
    } catch is CancellationError {
      log.withLock { _ = $0.cancelled.insert(name) }
      throw CancellationError()
    }
  }
}

private func hotels(_ names: String...) -> [Hotel] {
  names.map(Hotel.init(name:))
}

private let ratesHint =
  "nightlyRates(at:using:) must return once every rate has arrived"
private let failureHint =
  "when one request fails, nightlyRates(at:using:) must throw its error at once"

/// The contract of `nightlyRates(at:using:)`: each path, what the caller and the rate
/// service see, and the test that checks it (— where a column does not apply, and why).
///
/// | path | result, error | requests (started, running, cancelled) | timing |
/// | --- | --- | --- | --- |
/// | rates arrive in any order | in the hotels' order: `keepsTheOrder`; a hotel listed twice, its rate in both places: `aHotelListedTwice` (which of its two requests answered each place is not part of the contract, so an answer keyed by hotel passes) | — | — |
/// | every hotel | — | all running before any ends: `asksForEveryRateAtOnce` | — |
/// | no hotels | `[]`: `noHotels` | none made: `noHotels` | — |
/// | a request fails | its error: `firstFailureCancelsTheRest`; the first in time, not in the list: `firstErrorInTime`; not the error a request cancelled because of it answers: `firstErrorOverACancelledRequestsOwnError` | the rest cancelled, none left running, one slow to wind down included: `firstFailureCancelsTheRest` | at once: `firstErrorInTime` |
/// | the caller is cancelled before the call | `CancellationError`: `cancelledBeforeTheCall` | none still running after the call: `cancelledBeforeTheCall` | — |
/// | the caller is cancelled | `CancellationError`: `cancellingTheCallerCancelsEveryRequest` | every request sees it: `cancellingTheCallerCancelsEveryRequest` | — |
/// | cancelled after it returned | — the requests have ended with the call | | |
/// | a request fails where asking again would succeed | its error: `aFailureIsNotRetried` | one per hotel, the failed one not asked again: `aFailureIsNotRetried` | — |
/// | a hotel listed twice, asked once | — its rate in both places is what the caller sees; one request per entry is not promised (the rate of a hotel is one price) | | |
@Suite("5.4 Many at once")
struct ManyAtOnceTests {
  @Test("Returns every rate in the order of the hotels, whatever order they arrive in")
  func keepsTheOrder() async throws {
    // The first hotel answers last, the last one first: each request ends only after the
    // next hotel's request has ended, however busy the machine is.
    let service = FakeRates([
      "Alfama": .rateAfter(110, hotel: "Baixa"),
      "Baixa": .rateAfter(95, hotel: "Chiado"),
      "Chiado": .rateAfter(140, hotel: "Belém"),
      "Belém": .rateAfter(85, hotel: "Graça"),
      "Graça": .rate(70),
    ])

    let rates = try await withDeadline(.seconds(2), "nightlyRates(at:using:)", hint: ratesHint) {
      try await nightlyRates(
        at: hotels("Alfama", "Baixa", "Chiado", "Belém", "Graça"), using: service)
    }

    #expect(
      rates == [110, 95, 140, 85, 70],
      "rates[i] is the rate of hotels[i], not the i-th rate to arrive")
  }

  @Test("A hotel listed twice gets its rate in both of its places")
  func aHotelListedTwice() async throws {
    let service = FakeRates(["Alfama": .rate(110), "Baixa": .rate(95)])

    let rates = try await withDeadline(.seconds(2), "nightlyRates(at:using:)", hint: ratesHint) {
      try await nightlyRates(at: hotels("Alfama", "Baixa", "Alfama"), using: service)
    }

    #expect(
      rates == [110, 95, 110],
      """
      the list Alfama, Baixa, Alfama got the rates \(rates): rates[i] is the rate of \
      hotels[i], and a hotel may be listed twice (two rooms, two stays). A result that says \
      only which hotel it is for cannot tell its two places apart, so one of them kept no rate
      """)
  }

  @Test("Asks for every rate at once: all requests run before any has finished")
  func asksForEveryRateAtOnce() async throws {
    let allRunning = Rendezvous(parties: 5)
    let service = FakeRates([
      "Alfama": .rateWhenAllRunning(110, allRunning),
      "Baixa": .rateWhenAllRunning(95, allRunning),
      "Chiado": .rateWhenAllRunning(140, allRunning),
      "Belém": .rateWhenAllRunning(85, allRunning),
      "Graça": .rateWhenAllRunning(70, allRunning),
    ])

    let rates = try await withDeadline(.seconds(2), "nightlyRates(at:using:)", hint: ratesHint) {
      try await nightlyRates(
        at: hotels("Alfama", "Baixa", "Chiado", "Belém", "Graça"), using: service)
    }

    let ranTogether = allRunning.met
    let together = allRunning.arrivedAtGiveUp ?? 0
    #expect(
      ranTogether,
      Comment(
        rawValue: together > 1
          ? "the five requests never all ran at the same time: at most \(together) did, and "
            + "the others waited for one of them to finish; start a child task per hotel, all "
            + "of them, before awaiting any result"
          : "the five requests never all ran at the same time: each one waited for the one "
            + "before it, so the call takes the sum of their times; add a child task per hotel "
            + "to a task group before awaiting any result"))
    #expect(
      rates == [110, 95, 140, 85, 70],
      "rates[i] is the rate of hotels[i], whatever the order they arrive in")
  }

  @Test("Gives an empty list for no hotels")
  func noHotels() async throws {
    let service = FakeRates([:])

    let rates = try await withDeadline(.seconds(2), "nightlyRates(at:using:)", hint: ratesHint) {
      try await nightlyRates(at: [], using: service)
    }

    #expect(rates.isEmpty, "no hotels, no rates")
    #expect(service.log.value.started.isEmpty, "no hotels, so no request may be made")
  }

  @Test("The first failure is thrown, and the requests still running are cancelled")
  func firstFailureCancelsTheRest() async throws {
    let service = FakeRates([
      "Alfama": .rateUnlessCancelled(110),
      "Baixa": .failure(.soldOut, after: .milliseconds(50)),
      "Chiado": .rateUnlessCancelled(140),
      "Belém": .slowToStop(85),
    ])

    let returned: [Int]?
    do {
      returned = try await withDeadline(
        .seconds(2), "nightlyRates(at:using:)", hint: failureHint
      ) {
        try await nightlyRates(at: hotels("Alfama", "Baixa", "Chiado", "Belém"), using: service)
      }
    } catch {
      returned = nil
      #expect(error as? RateError == .soldOut, "threw \(error), not Baixa's RateError.soldOut")
    }
    // Returned at all: the failure never ended the call, so nothing had reason to cancel
    // the others, and the cancellation checks below would blame the wrong thing.
    if let returned {
      Issue.record(
        """
        nightlyRates(at:using:) returned \(returned) although \
        Baixa's request failed with soldOut: a failed request must end the call with its \
        error, not turn into a rate (or be left out)
        """)
      return
    }

    let log = service.log.value
    let notCancelled = ["Alfama", "Chiado", "Belém"].filter { !log.cancelled.contains($0) }
    #expect(
      notCancelled.isEmpty,
      """
      the requests for \(notCancelled.joined(separator: ", ")) were not cancelled when \
      Baixa failed: once one rate has failed, the others are of no use. A task group that \
      is left by a thrown error cancels its children, and that reaches a request only if the \
      child waits on it itself (not in a Task.detached or a Task of its own, which no \
      cancellation reaches). Children awaited in a fixed order (async let pairs, `try await \
      left + right`) do not see a later child's failure until the earlier ones are done, so \
      nothing is cancelled meanwhile
      """)
    #expect(
      log.running.isEmpty,
      Comment(
        rawValue: "\(log.running.sorted()) still running after the call had ended (Belém's "
          + "request takes 150 ms to wind down once cancelled): no request may outlive the "
          + "call, so it returns only once the requests it cancelled have ended; a cancel "
          + "asks a request to stop, it does not wait for it"))
  }

  @Test("Cancelling the caller cancels every request still running")
  func cancellingTheCallerCancelsEveryRequest() async throws {
    let service = FakeRates([
      "Alfama": .rateUnlessCancelled(110),
      "Baixa": .rateUnlessCancelled(95),
      "Chiado": .rateUnlessCancelled(140),
    ])
    let caller = Task {
      try await nightlyRates(at: hotels("Alfama", "Baixa", "Chiado"), using: service)
    }
    let allStarted = await eventually { service.log.value.started.count == 3 }

    caller.cancel()
    let result = try await withDeadline(
      .seconds(2), "nightlyRates(at:using:) after its task was cancelled",
      hint: "the requests did not see the caller's cancellation"
    ) {
      await caller.result
    }

    #expect(allStarted, "the three requests should all be running before any has an answer")
    #expect(throws: CancellationError.self) { try result.get() }
    let notCancelled = ["Alfama", "Baixa", "Chiado"].filter {
      !service.log.value.cancelled.contains($0)
    }
    #expect(
      notCancelled.isEmpty,
      """
      the caller was cancelled, but the requests for \(notCancelled.joined(separator: ", ")) \
      were not: a request made from a task the call does not own runs on after the call, \
      for nobody
      """)
  }

  @Test("A caller cancelled before the call throws CancellationError and leaves no request running")
  func cancelledBeforeTheCall() async throws {
    let service = FakeRates([
      "Alfama": .rateUnlessCancelled(110),
      "Baixa": .rateUnlessCancelled(95),
      "Chiado": .rateUnlessCancelled(140),
    ])
    let caller = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await nightlyRates(at: hotels("Alfama", "Baixa", "Chiado"), using: service)
    }
    let result = try await withDeadline(
      .seconds(2), "nightlyRates(at:using:) called from a task already cancelled",
      hint: "the requests did not see the caller's cancellation"
    ) {
      await caller.result
    }
    let running = service.log.value.running

    #expect(throws: CancellationError.self) { try result.get() }
    #expect(
      running.isEmpty,
      "nightlyRates returned while the requests for \(running.sorted()) still ran: a request made from a task the call does not own runs on after the call, for nobody"
    )
  }

  @Test("Throws the error that happens first, not the first in the list")
  func firstErrorInTime() async throws {
    let service = FakeRates([
      "Alfama": .failure(.closedForWinter, after: .milliseconds(400)),
      "Baixa": .rateUnlessCancelled(95),
      "Chiado": .failure(.soldOut, after: .milliseconds(20)),
    ])

    await #expect(throws: RateError.soldOut) {
      try await withDeadline(.seconds(2), "nightlyRates(at:using:)", hint: failureHint) {
        try await nightlyRates(at: hotels("Alfama", "Baixa", "Chiado"), using: service)
      }
    }

    #expect(
      service.log.value.cancelled == ["Alfama", "Baixa"],
      """
      when Chiado failed, the requests for Alfama and Baixa were still running and should \
      have been cancelled
      """)
  }

  @Test("The first failure is thrown, not the error a request cancelled because of it answers")
  func firstErrorOverACancelledRequestsOwnError() async throws {
    let service = FakeRates([
      "Alfama": .ownErrorWhenCancelled(.closedForWinter, else: 110),
      "Baixa": .rateUnlessCancelled(95),
      "Chiado": .failure(.soldOut, after: .milliseconds(20)),
    ])

    // (Room for requests made one after another, about 2 s here: other tests name that.)
    let outcome = await Result {
      try await withDeadline(.seconds(5), "nightlyRates(at:using:)", hint: failureHint) {
        try await nightlyRates(at: hotels("Alfama", "Baixa", "Chiado"), using: service)
      }
    }
    let thrown: (any Error)? = if case .failure(let error) = outcome { error } else { nil }
    #expect(
      thrown as? RateError == .soldOut,
      Comment(
        rawValue: "Chiado's request failed first (soldOut); Alfama's, cancelled because of it, "
          + "then answered with an error of its own (closedForWinter, as URLSession answers "
          + "a cancelled request with URLError(.cancelled)), and the call gave \(outcome): the "
          + "first failure in time is the call's error, and what the requests cancelled "
          + "because of it answer afterwards is only its echo"))
  }

  @Test("A failed request is not asked again: its failure ends the call")
  func aFailureIsNotRetried() async throws {
    let service = FakeRates(["Alfama": .rate(110), "Baixa": .failsTheFirstTime(.soldOut, then: 95)])

    let outcome = try await withDeadline(
      .seconds(2), "nightlyRates(at:using:)", hint: failureHint
    ) {
      await Result { try await nightlyRates(at: hotels("Alfama", "Baixa"), using: service) }
    }

    let askedForBaixa = service.log.value.started.filter { $0 == "Baixa" }.count
    let ending =
      switch outcome {
      case .success(let rates): "returned \(rates)"
      case .failure(let error): "threw \(error)"
      }
    let threwSoldOut =
      if case .failure(let error) = outcome { error as? RateError == .soldOut } else { false }
    #expect(
      threwSoldOut && askedForBaixa == 1,
      """
      Baixa's request failed with soldOut, and nightlyRates(at:using:) asked for Baixa's rate \
      \(askedForBaixa) time\(askedForBaixa == 1 ? "" : "s") and \(ending): the first failure \
      ends the call with its error. A request asked again after it failed (a retry) hides the \
      failure from the caller when the second answer is a rate, and sends the service requests \
      the caller never made
      """)
  }
}
