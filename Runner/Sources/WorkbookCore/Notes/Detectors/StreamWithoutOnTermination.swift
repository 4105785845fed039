import Foundation

/// ``NoteDetector/streamWithoutOnTermination``: a stream that wraps a source must stop it when
/// its listener leaves; `onTermination` is where.
extension CodeText {
  func streamsWithoutOnTermination() -> [Int] {
    guard !contains(#"\bonTermination\b"#, in: 0..<length) else { return [] }
    return builtStreams().filter { built in
      // A build closure that yields what it has and finishes before it returns wraps no
      // live source: nothing is left to stop.
      let text = units.substring(with: NSRange(location: built.lowerBound, length: built.count))
      guard !text.contains("makeStream"), let body = block(after: built.lowerBound) else {
        return true
      }
      return !find(#"\.finish\s*\("#, in: body).contains {
        enclosingBlocks(of: $0).first == body
      }
    }.map(\.lowerBound)
  }

  /// Where a stream is built with a continuation.
  func builtStreams() -> [Range<Int>] {
    ranges(
      #"\bAsync(Throwing)?Stream\s*(<[^>{}]*>)?\s*\.makeStream\s*\("#
        // The closure that gets the continuation (`{ continuation in`), not the body of a
        // function that returns a stream, nor `init(unfolding:)`'s trailing closure.
        + #"|\bAsync(Throwing)?Stream\s*(<[^>{}]*>)?\s*(\((?!\s*unfolding)[^()]*(\([^()]*\)[^()]*)*\))?"#
        + #"\s*\{\s*\w+\s+in\b"#)
  }
}
