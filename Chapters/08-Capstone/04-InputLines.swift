import Foundation

// The legacy way: a loop around a blocking read, on whatever thread runs it.
//
//     while let line = readLine() { handle(line) }
//
// A blocking read must not run on the shared pool (nor on a global Dispatch queue): it
// would hold one of its few threads for as long as the user does not type.

/// The lines read from `handle` (standard input, a pipe), as they arrive, without their
/// line endings; finishes at end of file.
func inputLines(from handle: FileHandle) -> AsyncStream<String> {
  let (lines, continuation) = AsyncStream.makeStream(of: String.self)
  // A thread of its own may block as long as it likes.
  let reader = Thread {
    var pending: [UInt8] = []
    while true {
      let chunk = handle.availableData  // blocks until data or end of file
      if chunk.isEmpty { break }  // end of file
      pending.append(contentsOf: chunk)
      while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
        continuation.yield(text(of: pending[..<newline]))
        pending.removeSubrange(...newline)
      }
    }
    // A last line without a newline is still a line.
    if !pending.isEmpty { continuation.yield(text(of: pending[...])) }
    continuation.finish()
  }
  reader.start()
  return lines
}

/// One line's text, without a trailing carriage return.
private func text(of bytes: ArraySlice<UInt8>) -> String {
  var bytes = bytes
  if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
  return String(decoding: bytes, as: UTF8.self)
}
