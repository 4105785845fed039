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
  // TODO: Honour `checking`: a checked continuation for `.checked`, an unsafe one for
  // `.unchecked`, and misuse messages that still name the bridge. Then write down, in a
  // comment, what each choice buys and what it costs.
  await withCheckedContinuation(isolation: isolation, function: function) { continuation in
    body(.checked(continuation))
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
