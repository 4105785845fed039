import Foundation

/// ``NoteDetector/streamWithoutOnTermination``: a stream that wraps a source must stop it when
/// its listener leaves; `onTermination` is where.
extension CodeText {
  func streamsWithoutOnTermination() -> [Int] {
    guard !contains(#"\bonTermination\b"#, in: 0..<length) else { return [] }
    return find(
      #"\bAsync(Throwing)?Stream\s*(<[^>{}]*>)?\s*\.makeStream\s*\("#
        // The closure that gets the continuation (`{ continuation in`), not the body of a
        // function that returns a stream, nor `init(unfolding:)`'s trailing closure.
        + #"|\bAsync(Throwing)?Stream\s*(<[^>{}]*>)?\s*(\((?!\s*unfolding)[^()]*(\([^()]*\)[^()]*)*\))?"#
        + #"\s*\{\s*\w+\s+in\b"#)
  }
}
