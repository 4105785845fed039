import Foundation
import Synchronization

// An alternative to the solution: `makeStream(of:)` instead of the closure initializer, and a
// splitter that takes one line at a time off the front of the pending bytes.

/// The lines read from `handle`, without their line feeds, until end of file.
func lines(from handle: FileHandle) -> AsyncStream<String> {
  let (stream, continuation) = AsyncStream.makeStream(of: String.self)
  let pending = PendingBytes()
  continuation.onTermination = { _ in
    handle.readabilityHandler = nil
  }
  handle.readabilityHandler = { handle in
    let data = handle.availableData
    if data.isEmpty {
      handle.readabilityHandler = nil
      if let last = pending.remainder() { continuation.yield(last) }
      continuation.finish()
    } else {
      pending.append(data).forEach { continuation.yield($0) }
    }
  }
  return stream
}

private final class PendingBytes: Sendable {
  private let bytes = Mutex<[UInt8]>([])

  /// Appends `data` and takes every complete line off the front.
  func append(_ data: Data) -> [String] {
    bytes.withLock { bytes in
      bytes.append(contentsOf: data)
      var lines: [String] = []
      while let end = bytes.firstIndex(of: UInt8(ascii: "\n")) {
        lines.append(String(decoding: bytes[..<end], as: UTF8.self))
        bytes.removeSubrange(...end)
      }
      return lines
    }
  }

  /// Whatever is left, as the last line, if anything is.
  func remainder() -> String? {
    bytes.withLock { bytes in
      defer { bytes = [] }
      return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }
  }
}
