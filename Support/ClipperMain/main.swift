// `clipper NAME [--port PORT]`: chat from the terminal through the Chapter 8 server.
// A thin main: the work is `runClipper` in the Capstone module (your Chapter 8 code).
// Chat lines go to standard output; what clipper itself says goes to standard error.

import Capstone
import ChatKit
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes one line, ignoring a closed pipe: `FileHandle.write(_:)` would trap on it.
func put(_ line: String, to handle: FileHandle) {
  try? handle.write(contentsOf: Data((line + "\n").utf8))
}

/// Says something about clipper itself, not the chat.
func status(_ line: String) { put(line, to: .standardError) }

func fail(_ sentence: String, code: Int32 = 1) -> Never {
  status("clipper: \(sentence)")
  exit(code)
}

/// NAME and the port from the command line; exits with a sentence when they are wrong.
func parseArguments() -> (name: String, port: UInt16) {
  var arguments = Array(CommandLine.arguments.dropFirst())
  var port: UInt16 = 4000
  if let flag = arguments.firstIndex(of: "--port") {
    let text = flag + 1 < arguments.count ? arguments[flag + 1] : ""
    // Port 0 means "any port" to a server; a client cannot connect to it.
    guard let value = UInt16(text), value != 0 else {
      fail(
        "the port must be a number from 1 to 65535, not \"\(text)\"; "
          + "use the one make server printed, e.g. PORT=4000", code: 2)
    }
    port = value
    arguments.removeSubrange(flag...flag + 1)
  }
  guard arguments.count == 1 else {
    status("usage: clipper NAME [--port PORT]")
    exit(2)
  }
  return (arguments[0], port)
}

let host = "127.0.0.1"
let (name, port) = parseArguments()
let address = "\(host):\(port)"

/// Whether the "connected" line has been shown.
final class Announcement: Sendable {
  private let shown = Mutex(false)

  /// Shows the "connected" line, unless it was already shown.
  func show() {
    let first = shown.withLock { wasShown in
      defer { wasShown = true }
      return !wasShown
    }
    if first { status("connected to \(address) as \(name) — type a line, Ctrl-D to quit") }
  }

  var wasShown: Bool { shown.withLock { $0 } }
}

/// Words `error` as a sentence for whoever ran clipper (make's NAME and PORT included).
func sentence(for error: any Error) -> String {
  switch error {
  case ClipperError.serverGone:
    return "lost the connection to \(address): the server stopped, or dropped \(name)"
  case ChatConnectionError.rejected(let line) where line.hasPrefix("! name taken"):
    return "the name \(name) is taken; pick another with NAME=…"
  case ChatConnectionError.rejected(let line) where line.hasPrefix("! invalid name: "):
    let rule = line.dropFirst("! invalid name: ".count)
    return "the server refused the name \"\(name)\": \(rule); pick another with NAME=…"
  case ChatConnectionError.rejected(let line):
    return "the server refused \(name): \(line.drop { $0 == "!" || $0 == " " })"
  case ChatConnectionError.socket(let socketError):
    return sentence(for: socketError)
  case ChatConnectionError.closedByServer:
    return "the server at \(address) closed the connection"
  case ChatConnectionError.cancelled, is CancellationError:
    return "the connection was cancelled (disconnect() or task cancellation) before the chat ended"
  case ChatConnectionError.notConnected:
    return "a line was sent while not connected: before the server's welcome, or after the end"
  case ChatConnectionError.invalidLine:
    return "a line (or the name) holds a newline or is longer than "
      + "\(ChatServer.maximumLineLength) bytes, so it cannot be sent"
  case ChatConnectionError.alreadyUsed:
    return "one ChatConnection was asked to connect twice; each connects once, so make a new one"
  case ChatConnectionError.invalidAddress(let badHost):
    return "\"\(badHost)\" is not an IPv4 address such as 127.0.0.1"
  case let error where "\(type(of: error))" == "Unfinished":
    // The starters' placeholder: part of Chapter 8 is not written yet.
    return "part of your Chapter 8 still throws the starter's Unfinished() placeholder; "
      + "`make check CHAPTER=8` shows which exercises are unfinished, and "
      + "`make clipper NAME=\(name) PORT=\(port) SOURCE=solutions` runs the reference client"
  default:
    return "stopped by an error clipper has no words for: \(describe(error))"
  }
}

func sentence(for error: SocketError) -> String {
  switch error.code {
  case ECONNREFUSED:
    return "no server on \(address): start one with make server PORT=\(port)"
  case ECONNRESET, EPIPE:
    return "the connection to \(address) was reset: the server stopped, or dropped \(name)"
  case ETIMEDOUT:
    return "\(address) did not answer in time"
  case ENETUNREACH, EHOSTUNREACH:
    return "\(host) cannot be reached from this machine"
  case EMFILE, ENFILE:
    return "no file descriptor left for a socket: too many files are open"
  default:
    return "talking to \(address) failed: the call \(error.operation) said "
      + "\"\(String(cString: strerror(error.code)))\" (errno \(error.code))"
  }
}

/// The most readable text an unknown error offers, and its type, to search the code for.
func describe(_ error: any Error) -> String {
  let text = (error as? any LocalizedError)?.errorDescription ?? String(describing: error)
  return "\(text) (\(type(of: error)))"
}

// Writing to a closed pipe must be an error, not the end of the process.
signal(SIGPIPE, SIG_IGN)

let announcement = Announcement()
// If nothing arrives, say so rather than sit silent: chat-server sends the joiner its own
// join with the welcome, so a quiet line means no answer, or lines lost by the client.
let quietWatch = Task {
  try await Task.sleep(for: .seconds(3))
  guard !announcement.wasShown else { return }
  status(
    "clipper: no line from \(address) after 3 s, though make server sends \"* \(name) joined\" "
      + "with its welcome: either the server does not answer, or your incoming stream loses "
      + "what comes with the welcome (set the delegate before connecting). Still waiting; "
      + "Ctrl-C stops.")
}

do {
  try await runClipper(
    name: name, input: .standardInput,
    output: { line in
      // Any line from the server means it welcomed us: the first is usually our own join.
      announcement.show()
      put(line, to: .standardOutput)
    },
    host: host, port: port)
  quietWatch.cancel()
  status("\(name) left \(address) (end of input)")
} catch {
  quietWatch.cancel()
  fail(sentence(for: error))
}
