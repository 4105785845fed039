import Synchronization

/// Records what code under test passes on, one event at a time (progress values, sensor
/// readings), from any thread, and says whether every event arrived, once, in the order it
/// was sent, and before the end: the call that delivers them returned, or the sequence
/// that carries them finished.
///
/// A fake sends hundreds of events, so that an answer that hands each one to a task or a
/// queue of its own, which may run in any order or after the end, shows it. Give the code
/// under test ``record(_:)`` (or ``recorder``), call ``close()`` right where the end is,
/// in the same job (after `await`, before anything else suspends), and ask for
/// ``fault(expected:)``: `nil` when everything arrived as sent.
///
///     let log = EventLog<Double>()
///     let result = try await withDeadline(…) {
///       let result = try await pairScale(session, code: code, progress: log.recorder)
///       log.close()  // pairScale has returned: what comes now is late
///       return result
///     }
///     if let fault = log.fault(expected: steps) { Issue.record(…fault.description…) }
public final class EventLog<Event: Sendable & Equatable>: Sendable {
  private struct State {
    var received: [Event] = []
    /// How many events had arrived when ``close()`` was called; `nil` while open.
    var closedAfter: Int?
  }

  private let state = Mutex(State())

  public init() {}

  /// Records `event`; safe from any thread.
  public func record(_ event: Event) {
    state.withLock { $0.received.append(event) }
  }

  /// ``record(_:)`` as a closure, for a parameter such as `progress:`.
  public var recorder: @Sendable (Event) -> Void { { self.record($0) } }

  /// Marks the end (the call returned, the sequence finished): whatever is recorded from
  /// now on is late. Returns what had arrived by then. Only the first call counts.
  @discardableResult
  public func close() -> [Event] {
    state.withLock { state in
      if state.closedAfter == nil { state.closedAfter = state.received.count }
      return Array(state.received.prefix(state.closedAfter!))
    }
  }

  /// Every event recorded so far, in the order they arrived, late ones included.
  public var received: [Event] { state.withLock { $0.received } }

  /// What had arrived when ``close()`` was called (everything, while the log is open).
  public var beforeClose: [Event] {
    state.withLock { Array($0.received.prefix($0.closedAfter ?? $0.received.count)) }
  }

  /// What arrived after ``close()``.
  public var late: [Event] {
    state.withLock { Array($0.received.dropFirst($0.closedAfter ?? $0.received.count)) }
  }

  /// What is wrong with the events recorded, compared with `expected` (the events the fake
  /// sent, in order, each once): `nil` when they all arrived, once each, in that order, and
  /// before ``close()``.
  public func fault(expected: [Event]) -> EventOrderFault<Event>? {
    EventOrder.fault(received: received, expected: expected, endedAfter: beforeClose.count)
  }
}

/// What went wrong with a run of events, compared with the run that was sent.
public enum EventOrderFault<Event: Sendable & Equatable>: Sendable, Equatable,
  CustomStringConvertible
{
  /// `event` arrived, but was never sent.
  case unexpected(Event)
  /// `event` arrived twice.
  case duplicated(Event)
  /// `event` arrived after `overtaker`, which was sent after it.
  case outOfOrder(Event, overtakenBy: Event)
  /// `count` events were sent and never arrived; `first` is the earliest of them.
  case missing(count: Int, of: Int, first: Event)
  /// `count` events arrived only after the end; `first` is the earliest of them.
  case late(count: Int, of: Int, first: Event)

  /// The facts, in a few words ("12 of 300 never arrived, the first of them 0.97"); the
  /// test's message says why they matter.
  public var description: String {
    switch self {
    case .unexpected(let event):
      return "\(event) arrived, although it was never sent"
    case .duplicated(let event):
      return "\(event) arrived twice"
    case .outOfOrder(let event, let overtaker):
      return "\(event) arrived after \(overtaker), which was sent after it"
    case .missing(let count, let total, let first):
      return count == total
        ? "none of the \(total) arrived"
        : "\(count) of \(total) never arrived, the first of them \(first)"
    case .late(let count, let total, let first):
      return "\(count) of \(total) arrived only after the end, the first of them \(first)"
    }
  }
}

/// Compares the events that arrived with those that were sent.
public enum EventOrder {
  /// What is wrong with `received` (in the order of arrival) compared with `expected` (in
  /// the order sent, each event once); `nil` when they are the same.
  ///
  /// - Parameter endedAfter: How many of `received` had arrived by the end (the call
  ///   returned, the sequence finished); the rest are late. `nil`: no end to check.
  ///
  /// One fault is reported, the first of: an event never sent, one that arrived twice, one
  /// that arrived out of order, events that never arrived, events that arrived late.
  public static func fault<Event: Sendable & Equatable>(
    received: [Event], expected: [Event], endedAfter: Int? = nil
  ) -> EventOrderFault<Event>? {
    var arrived = Array(repeating: false, count: expected.count)
    var newest: Int?
    for event in received {
      guard let index = expected.firstIndex(of: event) else { return .unexpected(event) }
      if arrived[index] { return .duplicated(event) }
      arrived[index] = true
      if let newest, index < newest { return .outOfOrder(event, overtakenBy: expected[newest]) }
      newest = index
    }
    let neverArrived = expected.indices.filter { !arrived[$0] }
    if let first = neverArrived.first {
      return .missing(count: neverArrived.count, of: expected.count, first: expected[first])
    }
    let late = received.dropFirst(endedAfter ?? received.count)
    if let first = late.first {
      return .late(count: late.count, of: expected.count, first: first)
    }
    return nil
  }
}
