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
  // TODO: Yield each line once it is complete, then, at end of file, the text after the last
  // line feed, and end the stream. A read may stop anywhere, even inside a character. Stop
  // listening to `handle` when the stream ends, however it ends.
  AsyncStream { continuation in
    continuation.finish()
  }
}
