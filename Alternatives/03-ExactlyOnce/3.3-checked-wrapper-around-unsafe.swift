import LegacyKit

/// Whether a bridge checks that its continuation is resumed exactly once.
enum ContinuationChecking: Sendable, Equatable {
  /// `CheckedContinuation`: a second resume stops the program with a message, and a
  /// continuation dropped without a resume is reported. Costs a little on every bridge.
  case checked
  /// `UnsafeContinuation`: no bookkeeping at all. A second resume or a dropped
  /// continuation is undefined behaviour that nobody reports.
  case unchecked

  /// Checked in debug builds, which is where tests and development run; unchecked in
  /// release builds, where the hot path needs every nanosecond.
  static var standard: ContinuationChecking {
    #if DEBUG
    .checked
    #else
    .unchecked
    #endif
  }
}

/// A continuation of either kind. Resume it exactly once.
enum BridgeContinuation<Value: Sendable>: Sendable {
  case checked(CheckedContinuation<Value, Never>)
  case unchecked(UnsafeContinuation<Value, Never>)

  func resume(returning value: Value) {
    switch self {
    case .checked(let continuation): continuation.resume(returning: value)
    case .unchecked(let continuation): continuation.resume(returning: value)
    }
  }
}

/// Suspends until `body` resumes the continuation it is given, a checked or an unsafe one
/// as `checking` says. `function` names the bridge in the runtime's misuse messages.
func withBridgeContinuation<Value: Sendable>(
  _ checking: ContinuationChecking = .standard,
  isolation: isolated (any Actor)? = #isolation,
  function: String = #function,
  _ body: (BridgeContinuation<Value>) -> Void
) async -> Value {
  // The trade-off. A checked continuation is an unsafe one plus a small heap object that
  // records whether it has been resumed: resuming twice stops the program with a message
  // naming `function`, and releasing it unresumed prints "leaked its continuation". That
  // bookkeeping costs an allocation and an atomic operation or two per bridge. For a
  // callback that takes milliseconds it is noise; for one that answers inside the call,
  // thousands of times a second, it can be the largest part of the bridge's cost (run
  // `make bench` to see it). An unsafe continuation skips all of it, and so a mistake
  // becomes silent: a second resume is undefined behaviour and a leak just hangs.
  //
  // So: checked wherever a mistake is possible and cheap to find, which is every debug
  // build and every test run; unsafe only on a measured hot path, and only behind this one
  // switch, so that the tests still run the same code with the checks on.
  // Always an unsafe continuation underneath; with checks on, it is wrapped in a checked
  // one, which adds exactly the bookkeeping (and the messages naming `function`) that
  // withCheckedContinuation would.
  await withUnsafeContinuation(isolation: isolation) { unsafe in
    switch checking {
    case .checked: body(.checked(CheckedContinuation(continuation: unsafe, function: function)))
    case .unchecked: body(.unchecked(unsafe))
    }
  }
}

/// The current value of `channel`. The dashboard calls this thousands of times a second.
func reading(
  of channel: Int, from hub: SensorHub, checking: ContinuationChecking = .standard
) async -> Double {
  await withBridgeContinuation(checking) { continuation in
    hub.read(channel: channel) { value in
      continuation.resume(returning: value)
    }
  }
}
