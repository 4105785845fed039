import Foundation

/// The lines read from `handle` (standard input, a pipe), as they arrive, without their
/// line endings; finishes at end of file.
func inputLines(from handle: FileHandle) -> AsyncStream<String> {
  AsyncStream { continuation in
    // A thread of its own may block as long as it likes.
    Thread.detachNewThread {
      var pending = Data()
      // availableData blocks until some bytes come; an empty read is the end of file.
      while case let chunk = handle.availableData, !chunk.isEmpty {
        pending.append(chunk)
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
          continuation.yield(line(pending[pending.startIndex..<newline]))
          pending = Data(pending[(newline + 1)...])
        }
      }
      if !pending.isEmpty { continuation.yield(line(pending)) }
      continuation.finish()
    }
  }
}

/// One line's text, without a trailing carriage return.
private func line(_ bytes: Data) -> String {
  let text = String(decoding: bytes, as: UTF8.self)
  return text.hasSuffix("\r") ? String(text.dropLast()) : text
}
