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
  let connection = ChatConnection()
  // The stream first: it sets the delegate, so no line after the welcome is lost.
  let incoming = connection.incomingLines()
  try await connection.connect(to: host, port: port, as: name)

  defer { connection.disconnect() }
  // Whichever side ends first throws, and the group cancels the other: the input loop
  // ends on cancellation, and the incoming stream hangs up when its loop is cancelled.
  do {
    try await withThrowingDiscardingTaskGroup { group in
      group.addTask {
        do {
          for try await line in incoming { output(line) }
        } catch {
          throw ClipperError.serverGone
        }
        // Ended because we stopped it: not the server's doing.
        if Task.isCancelled { return }
        throw ClipperError.serverGone
      }
      group.addTask {
        for await line in inputLines(from: input) {
          do {
            try await connection.send(line)
          } catch ChatConnectionError.invalidLine {
            output("! not sent: a line is at most \(ChatServer.maximumLineLength) bytes")
          } catch {
            throw ClipperError.serverGone
          }
        }
        throw InputEnded()
      }
    }
  } catch is InputEnded {
    return
  }
}

/// The input side's way to end the group: not a failure.
private struct InputEnded: Error {}
