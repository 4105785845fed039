import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the server answers to one request, including how it misbehaves.
///
/// The default is a well-behaved `200 OK` with a `Content-Length` and keep-alive. Each
/// field bends one thing: when the headers go out, how the body is cut and paced, how many
/// bytes are announced, and how the connection ends.
public struct HTTPTestResponse: Sendable {
  /// How the server ends the response.
  public enum Ending: Sendable, Equatable {
    /// Keeps the connection open for the next request (HTTP/1.1 keep-alive).
    case keepAlive
    /// Closes the connection cleanly (FIN) after the body.
    case close
    /// Resets the connection (RST) after the body: the client sees the connection drop.
    case reset
    /// Never finishes: after the body bytes it sends, the server holds the connection
    /// open, sending nothing, until the client closes it (or the server stops).
    case hold
  }

  public var status: Int
  public var headers: [(name: String, value: String)]
  public var body: [UInt8]
  /// The `Content-Length` sent; `nil` sends `body.count`.
  public var announcedLength: Int?
  /// How long the server waits before sending the status line and headers; `nil` never
  /// sends them (the server holds the connection until the client closes it).
  public var headerDelay: Duration?
  /// The body goes out in this many pieces of (about) equal size …
  public var pieces: Int
  /// … with this pause before each piece after the first.
  public var pieceDelay: Duration
  /// Only the first this-many body bytes are sent (a truncated body); `nil` sends them all.
  public var sendOnly: Int?
  /// Sends the body with `Transfer-Encoding: chunked`, one chunk per piece, and no
  /// `Content-Length` (`announcedLength` is ignored): the client cannot know the size
  /// until the body is over.
  public var chunked: Bool
  public var ending: Ending

  public init(
    status: Int = 200, headers: [(name: String, value: String)] = [], body: [UInt8] = [],
    announcedLength: Int? = nil, headerDelay: Duration? = .zero, pieces: Int = 1,
    pieceDelay: Duration = .zero, sendOnly: Int? = nil, chunked: Bool = false,
    ending: Ending = .keepAlive
  ) {
    self.status = status
    self.headers = headers
    self.body = body
    self.announcedLength = announcedLength
    self.headerDelay = headerDelay
    self.pieces = max(1, pieces)
    self.pieceDelay = pieceDelay
    self.sendOnly = sendOnly
    self.chunked = chunked
    self.ending = ending
  }

  /// `200 OK` with `body`.
  public static func ok(_ body: String) -> Self { Self(body: Array(body.utf8)) }
  /// `200 OK` with `body`.
  public static func ok(bytes body: [UInt8]) -> Self { Self(body: body) }
  /// A status such as 404 or 500, with a short text body.
  public static func status(_ code: Int, _ body: String = "") -> Self {
    Self(status: code, body: Array(body.utf8))
  }
  /// Reads the request, then sends nothing until the client closes the connection.
  public static var hang: Self { Self(headerDelay: nil) }
  /// `200 OK` with `body`, after waiting `delay` before the headers.
  public static func slowHeaders(_ delay: Duration, _ body: String) -> Self {
    Self(body: Array(body.utf8), headerDelay: delay)
  }
  /// Announces all of `body`, sends `after` bytes of it, then resets the connection.
  public static func dropped(_ body: [UInt8], after: Int) -> Self {
    Self(body: body, sendOnly: after, ending: .reset)
  }
  /// Announces all of `body`, sends `after` bytes of it, then closes cleanly.
  public static func truncated(_ body: [UInt8], after: Int) -> Self {
    Self(body: body, sendOnly: after, ending: .close)
  }
  /// Sends all of `body` but announces only `announced` bytes, then closes.
  public static func oversized(_ body: [UInt8], announced: Int) -> Self {
    Self(body: body, announcedLength: announced, ending: .close)
  }
  /// `200 OK` with `body` in `pieces` pieces, `every` apart (for download progress).
  public static func slowBody(_ body: [UInt8], pieces: Int, every: Duration) -> Self {
    Self(body: body, pieces: pieces, pieceDelay: every)
  }
  /// Announces all of `body`, sends `after` bytes of it, then holds the connection open
  /// until the client closes it: a download that stalls halfway.
  public static func stalls(_ body: [UInt8], after: Int) -> Self {
    Self(body: body, sendOnly: after, ending: .hold)
  }
  /// `200 OK` with `body` in `pieces` chunks, `every` apart, and no `Content-Length`: a body
  /// of unknown size.
  public static func unsized(_ body: [UInt8], pieces: Int = 1, every: Duration = .zero) -> Self {
    Self(body: body, pieces: pieces, pieceDelay: every, chunked: true)
  }
}

/// A small HTTP/1.1 server on 127.0.0.1 for tests: each request path answers with a
/// scripted ``HTTPTestResponse`` (or with a sequence of them, one per request), and the
/// server tells what the client did (which paths it requested and when, which connections
/// it closed before the response was over, how many connections are still open).
///
/// Zero dependencies: POSIX sockets, one thread that accepts and one thread per connection
/// with blocking reads and writes (every wait is a `poll` in short slices, so ``stop()``
/// ends everything promptly). Only what tests need: `GET` and `HEAD` without request
/// bodies, paths compared without their query.
public final class HTTPTestServer: @unchecked Sendable {
  private struct State {
    /// Per path, the answers still to give: the first answers the next request, and the
    /// last one every request after it.
    var routes: [String: [HTTPTestResponse]] = [:]
    var requests: [String] = []
    var heads: [String] = []
    var arrivals: [ContinuousClock.Instant] = []
    var abandoned: [String] = []
    var answered: [String] = []
    var open = 0
    var accepted = 0
    var stopped = false
    var connections: Set<Int32> = []
  }

  private let lock = NSLock()
  private var state = State()
  private let fallback: HTTPTestResponse
  private var listenFD: Int32 = -1
  /// The port the server listens on (known once ``start()`` has returned).
  public private(set) var port: UInt16 = 0

  /// A server answering `routes` (path → response) and `fallback` for any other path.
  public init(
    _ routes: [String: HTTPTestResponse] = [:],
    fallback: HTTPTestResponse = .status(404, "not found")
  ) {
    self.fallback = fallback
    state.routes = routes.mapValues { [$0] }
  }

  deinit { stop() }

  private func locked<T>(_ body: (inout State) -> T) -> T {
    lock.lock()
    defer { lock.unlock() }
    return body(&state)
  }

  /// Binds 127.0.0.1 on a free port and starts accepting connections.
  @discardableResult
  public func start() throws -> Self {
    #if os(Linux)
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
    let fd = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard fd >= 0 else { throw HTTPTestServerError("socket") }
    var on: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    #if !os(Linux)
    address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
    #endif
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
      }
    }
    guard bound, listen(fd, 128) == 0 else {
      let error = HTTPTestServerError("bind")
      close(fd)
      throw error
    }
    port = UInt16(bigEndian: address.sin_port)
    listenFD = fd
    let thread = Thread { [self] in acceptLoop(fd) }
    thread.name = "HTTPTestServer.accept"
    thread.start()
    return self
  }

  /// Stops accepting, closes every connection and the listening socket; idempotent.
  public func stop() {
    locked { state in
      guard !state.stopped else { return }
      state.stopped = true
      // Wakes the connection threads' polls; each closes its own socket (after taking it
      // out of the set under this lock, so none is closed and reused meanwhile).
      for fd in state.connections { shutdown(fd, Int32(SHUT_RDWR)) }
    }
  }

  /// `http://127.0.0.1:PORT/path`.
  public func url(_ path: String) -> URL {
    URL(string: "http://127.0.0.1:\(port)\(path.hasPrefix("/") ? "" : "/")\(path)")!
  }

  /// Answers `path` with `response` from now on.
  public func route(_ path: String, _ response: HTTPTestResponse) {
    locked { $0.routes[path] = [response] }
  }

  /// Answers the next requests for `path` with `responses`, one each, in order; the last
  /// one answers every request after them. An empty list removes the route.
  public func route(_ path: String, _ responses: [HTTPTestResponse]) {
    locked { $0.routes[path] = responses.isEmpty ? nil : responses }
  }

  /// The paths requested so far, in order.
  public var requests: [String] { locked { $0.requests } }
  /// The head of each request so far, in order: its request line and header fields, as the
  /// client sent them.
  public var requestHeads: [String] { locked { $0.heads } }
  /// The requests so far, in order, each with the time its head had arrived: how far apart
  /// a client's requests came.
  public var arrivals: [(path: String, time: ContinuousClock.Instant)] {
    locked { state in zip(state.requests, state.arrivals).map { (path: $0, time: $1) } }
  }
  /// The paths whose connection the client closed before the response was over (a
  /// cancelled task shows up here).
  public var abandoned: [String] { locked { $0.abandoned } }
  /// The paths whose response the server has finished sending (everything it was scripted
  /// to send), in order: from here on, what happens is up to the client.
  public var answered: [String] { locked { $0.answered } }
  /// Connections the server has accepted and not yet seen closed.
  public var openConnections: Int { locked { $0.open } }
  /// Connections accepted so far.
  public var acceptedConnections: Int { locked { $0.accepted } }

  private var stopped: Bool { locked { $0.stopped } }

  private func acceptLoop(_ listener: Int32) {
    defer { close(listener) }
    while !stopped {
      var entry = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
      guard poll(&entry, 1, 10) > 0 else { continue }
      let fd = accept(listener, nil, nil)
      guard fd >= 0 else { continue }
      var on: Int32 = 1
      #if !os(Linux)
      setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
      #endif
      // Each piece goes out as soon as it is written: without this, a body sent after its
      // headers waits for the client's delayed acknowledgement (40 ms on Linux), and every
      // request on a kept-alive connection takes that long.
      setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
      let admitted: Bool = locked { state in
        guard !state.stopped else { return false }
        state.open += 1
        state.accepted += 1
        state.connections.insert(fd)
        return true
      }
      guard admitted else {
        close(fd)
        return
      }
      let thread = Thread { [self] in serve(fd) }
      thread.name = "HTTPTestServer.connection"
      thread.start()
    }
  }

  // MARK: - One connection

  private func serve(_ fd: Int32) {
    var reset = false
    defer {
      if reset {
        var abort = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, socklen_t(MemoryLayout<linger>.size))
      }
      locked { state in
        state.open -= 1
        state.connections.remove(fd)
      }
      close(fd)
    }
    var buffer: [UInt8] = []
    while true {
      // One request: read up to the blank line after the headers.
      guard let head = readHead(fd, &buffer) else { return }
      let requestLine = head.split(separator: "\r\n", omittingEmptySubsequences: false).first ?? ""
      let words = requestLine.split(separator: " ")
      let target = words.count > 1 ? String(words[1]) : "/"
      let path = String(target.split(separator: "?", omittingEmptySubsequences: false).first ?? "")
      let isHead = words.first == "HEAD"
      let clientCloses = head.lowercased().contains("\r\nconnection: close")
      let arrived = ContinuousClock.now
      let response: HTTPTestResponse = locked { state in
        state.requests.append(path)
        state.heads.append(head)
        state.arrivals.append(arrived)
        guard var answers = state.routes[path], let first = answers.first else { return fallback }
        if answers.count > 1 {
          answers.removeFirst()
          state.routes[path] = answers
        }
        return first
      }
      switch respond(fd, response, isHead: isHead) {
      case .finished:
        locked { $0.answered.append(path) }
        if response.ending == .reset {
          reset = true
          return
        }
        if response.ending == .close || clientCloses { return }
      case .clientClosed:
        locked { $0.abandoned.append(path) }
        return
      case .stopped:
        return
      }
    }
  }

  private enum Outcome { case finished, clientClosed, stopped }

  private func respond(_ fd: Int32, _ response: HTTPTestResponse, isHead: Bool) -> Outcome {
    guard let headerDelay = response.headerDelay else { return holdUntilClosed(fd) }
    if let outcome = pause(fd, headerDelay) { return outcome }
    let announced = response.announcedLength ?? response.body.count
    var head = "HTTP/1.1 \(response.status) \(reason(response.status))\r\n"
    if response.chunked {
      head += "Transfer-Encoding: chunked\r\n"
    } else {
      head += "Content-Length: \(announced)\r\n"
    }
    head += "Content-Type: application/octet-stream\r\n"
    if response.ending != .keepAlive { head += "Connection: close\r\n" }
    for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
    head += "\r\n"
    guard send(fd, Array(head.utf8)) else { return .clientClosed }
    if !isHead {
      let body = Array(response.body.prefix(response.sendOnly ?? response.body.count))
      let size = max(1, (body.count + response.pieces - 1) / response.pieces)
      var start = 0
      var first = true
      while start < body.count {
        if !first, let outcome = pause(fd, response.pieceDelay) { return outcome }
        first = false
        let end = min(body.count, start + size)
        var piece = Array(body[start..<end])
        if response.chunked {
          piece = Array("\(String(piece.count, radix: 16))\r\n".utf8) + piece + Array("\r\n".utf8)
        }
        guard send(fd, piece) else { return .clientClosed }
        start = end
      }
      // The last chunk, unless the body was cut short.
      if response.chunked, body.count == response.body.count {
        guard send(fd, Array("0\r\n\r\n".utf8)) else { return .clientClosed }
      }
    }
    if response.ending == .hold { return holdUntilClosed(fd) }
    return .finished
  }

  /// Waits `delay`, unless the client closes the connection or the server stops first.
  private func pause(_ fd: Int32, _ delay: Duration) -> Outcome? {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: delay)
    repeat {
      if stopped { return .stopped }
      if clientClosed(fd, waitingMilliseconds: 5) { return .clientClosed }
    } while clock.now < deadline
    return nil
  }

  private func holdUntilClosed(_ fd: Int32) -> Outcome {
    while true {
      if stopped { return .stopped }
      if clientClosed(fd, waitingMilliseconds: 10) { return .clientClosed }
    }
  }

  /// Whether the client has closed (or reset) the connection; waits up to the given time
  /// for something to happen. Bytes the client sends meanwhile are left unread.
  private func clientClosed(_ fd: Int32, waitingMilliseconds: Int32) -> Bool {
    var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    guard poll(&entry, 1, waitingMilliseconds) > 0 else { return false }
    if entry.revents & Int16(POLLHUP | POLLERR) != 0 { return true }
    var byte: UInt8 = 0
    let count = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
    if count == 0 { return true }
    if count < 0 { return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR }
    // The client sent more (a pipelined request): not a close. Do not spin on it.
    usleep(UInt32(waitingMilliseconds) * 1000)
    return false
  }

  /// The request head (without the blank line), or nil if the connection closed first.
  private func readHead(_ fd: Int32, _ buffer: inout [UInt8]) -> String? {
    let separator: [UInt8] = Array("\r\n\r\n".utf8)
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      if let range = firstRange(of: separator, in: buffer) {
        let head = String(decoding: buffer[..<range], as: UTF8.self)
        buffer.removeSubrange(..<(range + separator.count))
        return head
      }
      if stopped { return nil }
      var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      guard poll(&entry, 1, 10) > 0 else { continue }
      let count = recv(fd, &chunk, chunk.count, 0)
      if count <= 0 {
        if count < 0, errno == EINTR || errno == EAGAIN { continue }
        return nil
      }
      buffer.append(contentsOf: chunk[..<count])
    }
  }

  private func firstRange(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
    guard haystack.count >= needle.count else { return nil }
    for start in 0...(haystack.count - needle.count)
    where haystack[start..<(start + needle.count)].elementsEqual(needle) {
      return start
    }
    return nil
  }

  /// Sends all of `bytes`; false if the connection broke.
  private func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    var sent = 0
    while sent < bytes.count {
      let count = bytes[sent...].withUnsafeBytes { raw -> Int in
        #if os(Linux)
        Glibc.send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL))
        #else
        Darwin.send(fd, raw.baseAddress, raw.count, 0)
        #endif
      }
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { return false }
      sent += count
    }
    return true
  }

  private func reason(_ status: Int) -> String {
    switch status {
    case 200: "OK"
    case 404: "Not Found"
    case 500: "Internal Server Error"
    case 503: "Service Unavailable"
    default: "Status"
    }
  }
}

/// A socket call of the server that failed, with its `errno`.
public struct HTTPTestServerError: Error, CustomStringConvertible {
  public let operation: String
  public let code: Int32
  init(_ operation: String) {
    self.operation = operation
    code = errno
  }
  public var description: String { "\(operation) failed (errno \(code))" }
}
