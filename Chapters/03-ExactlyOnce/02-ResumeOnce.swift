import LegacyKit
import Synchronization

// The callback way:
//
//     scale.measure { result in
//       // Older firmware can get here more than once for one measurement,
//       // sometimes from several threads at the same moment.
//     }

/// Resumes the continuation it wraps at most once: the first call wins and later calls
/// are ignored. Any number of threads may call it at the same time.
final class ResumeOnce<Value: Sendable, Failure: Error>: Sendable {
  private let continuation: CheckedContinuation<Value, Failure>

  init(_ continuation: CheckedContinuation<Value, Failure>) {
    self.continuation = continuation
  }

  /// Resumes the continuation with `result` unless an earlier call already did.
  /// - Returns: Whether this call resumed it.
  @discardableResult
  func resume(with result: Result<Value, Failure>) -> Bool {
    // TODO: Let only the first call through, even when several threads call at once; later
    // calls must return false without touching the continuation. As shipped, every call
    // resumes it, and the second resume stops the program.
    continuation.resume(with: result)
    return true
  }

  /// Resumes the continuation with `value` unless an earlier call already did.
  @discardableResult
  func resume(returning value: Value) -> Bool {
    resume(with: .success(value))
  }

  /// Resumes the continuation by throwing `error` unless an earlier call already did.
  @discardableResult
  func resume(throwing error: Failure) -> Bool {
    resume(with: .failure(error))
  }
}

/// Weighs whoever stands on `scale`. The first reading the scale sends is the answer.
func weigh(on scale: BluetoothScale) async throws -> Double {
  try await withCheckedThrowingContinuation { continuation in
    let once = ResumeOnce(continuation)
    scale.measure { result in
      once.resume(with: result)
    }
  }
}
