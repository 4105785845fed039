import Foundation

/// Shapes of code that raise a note and that a construct cannot say, found in code with its
/// comments and string literals blanked (``SwiftSource/codeOnly(_:)``). Each is a heuristic
/// over the text, not a parse: the verify check that no reference solution or alternative
/// gets a caution note keeps its false positives in view.
public enum NoteDetector: String, Codable, Sendable, CaseIterable {
  /// `Task.detached`, also spelled with its generic arguments (`Task<Int, Never>.detached`).
  case detachedTask
  /// A blocking wait in async code: `.wait(` not awaited (a semaphore, a group, a condition),
  /// `Thread.sleep`, `sleep(`, `usleep(`, inside an async function or a task's closure.
  case blockingWaitInAsyncCode
  /// A `.lock()` in async code whose `.unlock()` comes after an `await` (or is deferred to
  /// the end of a block that awaits).
  case lockHeldAcrossAwait
  /// `Task {}` or `Task.detached {}` created inside the body of a loop.
  case taskInLoop
  /// `MainActor.run` inside code already isolated to the main actor (a `@MainActor` type,
  /// function or closure), not in a detached task, a nonisolated or `@concurrent`
  /// function, or a closure another queue runs.
  case mainActorRunOnMainActor
  /// An `AsyncStream` or `AsyncThrowingStream` built with a continuation in a file that never
  /// sets `onTermination`.
  case streamWithoutOnTermination

  /// The UTF-16 offsets in `code` (already code-only) where the shape starts.
  func matches(in code: String) -> [Int] {
    let text = CodeText(code)
    switch self {
    case .detachedTask: return text.find(#"(?<![\w.])Task\s*(<[^{}()]*>)?\s*\.\s*detached\b"#)
    case .blockingWaitInAsyncCode: return text.blockingWaitsInAsyncCode()
    case .lockHeldAcrossAwait: return text.locksHeldAcrossAwait()
    case .taskInLoop: return text.tasksInLoops()
    case .mainActorRunOnMainActor: return text.mainActorRunsOnTheMainActor()
    case .streamWithoutOnTermination: return text.streamsWithoutOnTermination()
    }
  }
}
