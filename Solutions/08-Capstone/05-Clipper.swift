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

  // Each side says how it ended; the first one to end decides for the whole command.
  let ending = await withTaskGroup(of: ClipperEnding.self) { group in
    group.addTask {
      do {
        for try await line in incoming { output(line) }
      } catch {
        return .serverGone
      }
      // A clean end without our disconnect cannot happen first; treat it as the server's.
      return .serverGone
    }
    group.addTask {
      for await line in inputLines(from: input) {
        do {
          try await connection.send(line)
        } catch ChatConnectionError.invalidLine {
          output("! not sent: a line is at most \(ChatServer.maximumLineLength) bytes")
        } catch {
          return .serverGone
        }
      }
      return .inputEnded
    }
    let first = await group.next() ?? .inputEnded
    // Stop the other side: the input loop ends on cancellation, and hanging up finishes
    // the incoming stream. The group waits for both before returning.
    group.cancelAll()
    connection.disconnect()
    return first
  }
  if ending == .serverGone { throw ClipperError.serverGone }
}

/// How one side of the command ended.
private enum ClipperEnding: Sendable {
  case inputEnded
  case serverGone
}
