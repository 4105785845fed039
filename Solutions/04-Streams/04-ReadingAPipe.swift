import Foundation
import Synchronization

// The callback way, in a tool that shows a child process's log as it comes:
//
//     handle.readabilityHandler = { handle in
//       let data = handle.availableData
//       if data.isEmpty {  // end of file
//         handle.readabilityHandler = nil
//         return
//       }
//       // Whatever has arrived: half a line, or three and a half.
//       self.log.append(String(decoding: data, as: UTF8.self))
//     }

/// The lines read from `handle`, without their line feeds, until end of file, for as long as
/// the caller iterates: `for await line in lines(from: pipe.fileHandleForReading) { … }`.
///
/// A line may arrive in several reads, and a read may hold several lines. Empty lines are
/// lines too, and so is the text after the last line feed. The readability handler is removed
/// when the stream ends, at end of file or when the iteration ends, however it ends.
func lines(from handle: FileHandle) -> AsyncStream<String> {
  AsyncStream { continuation in
    let splitter = LineSplitter()
    // However the iteration ends, stop reading. Set before the handler, which may run at once.
    continuation.onTermination = { _ in
      handle.readabilityHandler = nil
    }
    handle.readabilityHandler = { handle in
      let data = handle.availableData
      guard !data.isEmpty else {
        // End of file. Remove the handler first: at end of file it would be called again and
        // again, with nothing to read. Then the text after the last line feed, if any, is the
        // last line; and the stream ends here, or the consumer waits forever.
        handle.readabilityHandler = nil
        if let last = splitter.rest() {
          continuation.yield(last)
        }
        continuation.finish()
        return
      }
      for line in splitter.lines(adding: data) {
        continuation.yield(line)
      }
    }
  }
}

/// Cuts bytes into lines, keeping the unfinished one for the next read.
///
/// It works on bytes, not text: a read can end in the middle of a multi-byte character, and
/// decoding each read on its own would garble it. Only complete lines are decoded. The
/// readability handler runs on the handle's queue, one call at a time, but nothing tells the
/// compiler so (the handler is `@Sendable`): the bytes are guarded.
private final class LineSplitter: Sendable {
  private static let lineFeed = UInt8(ascii: "\n")
  private let pending = Mutex<[UInt8]>([])

  /// Adds `data` and returns the lines it completes, in order.
  func lines(adding data: Data) -> [String] {
    pending.withLock { bytes in
      bytes.append(contentsOf: data)
      guard let lastLineFeed = bytes.lastIndex(of: Self.lineFeed) else { return [] }
      // `omittingEmptySubsequences: false`: two line feeds in a row are an empty line, which
      // `split`'s default would silently drop.
      let complete = bytes[..<lastLineFeed].split(
        separator: Self.lineFeed, omittingEmptySubsequences: false)
      let lines = complete.map { String(decoding: $0, as: UTF8.self) }
      bytes.removeSubrange(...lastLineFeed)
      return lines
    }
  }

  /// The unfinished line, if anything is left: at end of file, it is the last line.
  func rest() -> String? {
    pending.withLock { bytes in
      guard !bytes.isEmpty else { return nil }
      defer { bytes.removeAll() }
      return String(decoding: bytes, as: UTF8.self)
    }
  }
}
