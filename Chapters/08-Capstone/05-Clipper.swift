import ChatKit
import Foundation

/// Why the clipper command stopped before its input ended.
public enum ClipperError: Error, Equatable {
  /// The server went away.
  case serverGone
}

/// The `clipper NAME` command: joins the chat as `name`, prints every line the server
/// sends to `output`, and sends every line read from `input`, each in the order it came.
///
/// Returns at the end of the input, after sending every line and hanging up. Throws when
/// the connection cannot be made, or ``ClipperError/serverGone`` when the server goes away
/// first, however the connection was lost. Cancelling it hangs up and ends it. No task it
/// starts outlives it, nor any `output` call.
public func runClipper(
  name: String, input: FileHandle, output: @escaping @Sendable (String) -> Void,
  host: String = "127.0.0.1", port: UInt16
) async throws {
  // TODO: Join the chat, then print what the server sends and send what `input` holds, both
  // at once, until either ends: then hang up, and return or throw as documented above. A
  // line that cannot be sent is reported to `output`, and the chat goes on.
  throw Unfinished()
}

private struct Unfinished: Error {}
