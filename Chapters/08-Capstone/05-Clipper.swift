import ChatKit
import Foundation

/// Why the clipper command stopped before its input ended.
public enum ClipperError: Error, Equatable {
  /// The server went away.
  case serverGone
}

/// The `clipper NAME` command: joins the chat as `name`, prints every line the server
/// sends to `output`, and sends every line read from `input`.
///
/// Returns at the end of the input, after hanging up. Throws when the connection cannot
/// be made, or ``ClipperError/serverGone`` when the server goes away first. No task it
/// starts outlives it.
public func runClipper(
  name: String, input: FileHandle, output: @escaping @Sendable (String) -> Void,
  host: String = "127.0.0.1", port: UInt16
) async throws {
  // TODO: Make a `ChatConnection`, its `incomingLines()` (before connecting), and connect.
  // Then, in a task group, print the incoming lines in one child and send `inputLines(from:)`
  // in another. Whichever ends first decides: cancel the other and `disconnect()`; return
  // at end of input, throw `ClipperError.serverGone` when the incoming lines end first.
  throw Unfinished()
}

private struct Unfinished: Error {}
