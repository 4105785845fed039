// chat-server: runs ChatKit's ChatServer on 127.0.0.1 until SIGINT or SIGTERM.
//
//     chat-server [--port N]     (default 0: any free port, printed at start)

import ChatKit
import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes `text` and a newline to standard output at once (no buffering to flush).
func say(_ text: String, to descriptor: Int32 = STDOUT_FILENO) {
  var bytes = Array((text + "\n").utf8)
  var offset = 0
  while offset < bytes.count {
    let count = bytes.withUnsafeMutableBytes {
      write(descriptor, $0.baseAddress! + offset, $0.count - offset)
    }
    if count <= 0 { return }
    offset += count
  }
}

func usage() -> Never {
  say("usage: chat-server [--port N]   (N from 0 to 65535; 0 picks a free port)", to: STDERR_FILENO)
  exit(2)
}

var port: UInt16 = 0
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
  switch argument {
  case "--port", "-p":
    guard let value = arguments.popFirst().flatMap({ UInt16($0) }) else { usage() }
    port = value
  case "--help", "-h":
    say("usage: chat-server [--port N]   (N from 0 to 65535; 0 picks a free port)")
    exit(0)
  default:
    usage()
  }
}

// Each joiner hears its own join too: that line is how a client (`make clipper`) knows,
// and can show, that it is in.
let server = ChatServer(port: port, echoesJoin: true, log: { say($0) })
do {
  try server.start()
} catch {
  say("chat-server: cannot listen on 127.0.0.1:\(port): \(error)", to: STDERR_FILENO)
  exit(1)
}
say("listening on 127.0.0.1:\(server.port)")

// Stop cleanly on Ctrl-C or `kill`: close every client, then exit.
var signalSources: [any DispatchSourceSignal] = []
for number in [SIGINT, SIGTERM] {
  signal(number, SIG_IGN)
  let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
  source.setEventHandler {
    server.stop()
    say("stopped")
    exit(0)
  }
  source.resume()
  signalSources.append(source)
}
signal(SIGPIPE, SIG_IGN)
dispatchMain()
