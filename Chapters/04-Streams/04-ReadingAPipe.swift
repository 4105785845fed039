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
  // TODO: Inside the stream's closure, set a readability handler that keeps the bytes of the
  // unfinished line and yields each complete line; at end of file (empty data), yield what is
  // left, finish the stream and remove the handler. Remove it in `onTermination` too.
  AsyncStream { continuation in
    continuation.finish()
  }
}
