import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A line-based chat server on the loopback interface.
///
/// ## Protocol
///
/// Every message, either way, is one line of UTF-8 ending in `\n` (a `\r` before it is
/// ignored). A line may hold at most ``maximumLineLength`` bytes.
///
/// - The client's first line is its name: 1 to ``maximumNameLength`` letters, digits,
///   `-`, `_` or `.`, not already in use. The server answers `* welcome NAME` to that client
///   and `* NAME joined` to everyone else; or, for a bad name, `! invalid name: …` or
///   `! name taken: NAME`, and closes the connection.
/// - Every later non-empty line is a message: the server sends `NAME: text` to every other
///   client, never back to the sender. Empty lines are ignored.
/// - A line over the limit is refused: the sender alone gets
///   `! line too long (max 1024 bytes)`, the line is dropped (the server skips to the next
///   newline, never buffering more than the limit), and the connection stays open.
/// - When a client disconnects, however abruptly (even mid-line; the unfinished line is
///   dropped), everyone else gets `* NAME left`.
/// - A client that does not read, and so lets more than ``maximumPendingOutput`` bytes
///   pile up for it, is disconnected (and announced as having left).
///
/// Lines from the server that start with `* ` are notices and `! ` are errors for that
/// client; anything else is `NAME: text`.
///
/// ## Implementation
///
/// Non-blocking sockets, one Dispatch read source per client (output that does not fit a
/// client's socket is retried every few milliseconds), and one serial queue that owns all
/// state.
public final class ChatServer: @unchecked Sendable {
  /// The longest line, in bytes without the newline, that the server accepts.
  public static let maximumLineLength = 1024
  /// The longest name, in bytes.
  public static let maximumNameLength = 32
  /// How many bytes may wait for a slow reader before the server disconnects it.
  public static let maximumPendingOutput = 4 << 20

  private let requestedPort: UInt16
  private let queue = DispatchQueue(label: "ChatKit.ChatServer")
  private let log: (@Sendable (String) -> Void)?
  private let greeting: [String]
  private let echoesJoin: Bool

  // Everything below belongs to `queue`.
  private var listenFD: Int32 = -1
  private var listener: DispatchSourceRead?
  private var sweeper: DispatchSourceTimer?
  private var boundPort: UInt16 = 0
  private var clients: [Int: Client] = [:]
  private var nextID = 0
  /// Clients with output waiting to be written at the end of the current event.
  private var dirty: Set<Int> = []
  private var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)

  /// A server for 127.0.0.1:`port`; port 0 lets the kernel choose a free one (see
  /// ``port`` after ``start()``). `log`, if given, receives one line per join and leave,
  /// on the server's queue.
  ///
  /// `greeting`, like a message of the day, is sent to each client that joins right after
  /// its `* welcome NAME`, in the same write: the client reads them together, so a client
  /// that starts listening only once its connect completed has already missed them.
  ///
  /// `echoesJoin` also sends each joiner its own `* NAME joined`, after the greeting and in
  /// the same write, so that a client shows its arrival like anyone else's (and has a line
  /// that says it is in). Off by default: the protocol above sends it to the others only.
  public init(
    port: UInt16 = 0, greeting: [String] = [], echoesJoin: Bool = false,
    log: (@Sendable (String) -> Void)? = nil
  ) {
    requestedPort = port
    self.greeting = greeting
    self.echoesJoin = echoesJoin
    self.log = log
  }

  deinit {
    // Only reachable without stop() if nothing else holds the server; the sources'
    // handlers hold it weakly.
    listener?.cancel()
    sweeper?.cancel()
    for client in clients.values { client.close() }
  }

  /// The port the server listens on: known once ``start()`` has returned, 0 before.
  public var port: UInt16 { queue.sync { boundPort } }

  /// The names of the clients that have joined, sorted.
  public var names: [String] { queue.sync { clients.values.compactMap(\.name).sorted() } }

  /// Binds 127.0.0.1 on the port and starts accepting clients. Throws ``SocketError`` if
  /// the port is taken (or any other socket call fails); calling it twice does nothing.
  public func start() throws {
    try queue.sync {
      guard listener == nil else { return }
      let fd = try Socket.makeTCP()
      var on: Int32 = 1
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
      let address = Socket.address(host: "127.0.0.1", port: requestedPort)!
      guard Socket.bind(fd, to: address) == 0 else {
        let error = SocketError("bind")
        close(fd)
        throw error
      }
      guard listen(fd, 512) == 0 else {
        let error = SocketError("listen")
        close(fd)
        throw error
      }
      do {
        boundPort = try Socket.localPort(fd)
      } catch {
        close(fd)
        throw error
      }
      listenFD = fd
      let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
      source.setEventHandler { [weak self] in self?.acceptClients() }
      source.setCancelHandler { close(fd) }
      listener = source
      source.resume()

      let timer = DispatchSource.makeTimerSource(queue: queue)
      timer.schedule(deadline: .now() + Self.sweepInterval, repeating: Self.sweepInterval)
      timer.setEventHandler { [weak self] in self?.sweep() }
      sweeper = timer
      timer.resume()
    }
  }

  /// How often ``sweep()`` looks for connections whose read source missed an event.
  static let sweepInterval = DispatchTimeInterval.milliseconds(200)

  /// Stops listening and closes every client's connection (without announcements). The
  /// server cannot be started again.
  public func stop() {
    queue.sync {
      sweeper?.cancel()
      sweeper = nil
      if let listener {
        listener.cancel()
        self.listener = nil
        listenFD = -1
      }
      for client in clients.values { client.close() }
      clients.removeAll()
      dirty.removeAll()
    }
  }

  /// Closes the connection of the client that joined as `name`, as if the server had gone
  /// away for that client alone: it sees the end of the connection
  /// (``ChatConnectionError/closedByServer``), or with `reset` a connection reset
  /// (``ChatConnectionError/socket(_:)``, `ECONNRESET`), and everyone else hears
  /// `* NAME left`. The server goes on listening, so the client may join again at once.
  /// Returns false if no client has that name.
  @discardableResult
  public func disconnect(_ name: String, reset: Bool = false) -> Bool {
    queue.sync {
      guard let client = clients.values.first(where: { $0.name == name }) else { return false }
      if reset { client.abortOnClose() }
      drop(client)
      flush()
      return true
    }
  }

  // MARK: - Events (all on `queue`)

  private func acceptClients() {
    while true {
      let fd = accept(listenFD, nil, nil)
      guard fd >= 0 else { return }  // EAGAIN: none left; other errors: try next event.
      do {
        try Socket.setNonBlocking(fd)
      } catch {
        close(fd)
        continue
      }
      #if !os(Linux)
      var on: Int32 = 1
      setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
      #endif
      nextID += 1
      let client = Client(id: nextID, fd: fd, queue: queue)
      clients[client.id] = client
      let id = client.id
      client.readSource.setEventHandler { [weak self] in self?.readFrom(id) }
      client.readSource.resume()
    }
  }

  /// Reads from every client that `poll` says has something: on Linux, a read source does
  /// not always fire for a connection reset that arrives after the last data was read.
  private func sweep() {
    for client in clients.values where Socket.hasEvents(client.fd) {
      readFrom(client.id)
    }
  }

  private func readFrom(_ id: Int) {
    guard let client = clients[id] else { return }
    let count = readBuffer.withUnsafeMutableBytes { read(client.fd, $0.baseAddress, $0.count) }
    if count < 0 && Socket.wouldBlock(errno) { return }
    guard count > 0 else {
      // 0: the client closed its end; below 0: reset or another error. Either way it is
      // gone, and any unfinished line with it.
      drop(client)
      flush()
      return
    }
    let pieces = readBuffer.withUnsafeBytes { client.splitter.feed(.init(rebasing: $0[..<count])) }
    for piece in pieces {
      guard clients[id] != nil else { break }  // Dropped by an earlier line (a bad name).
      switch piece {
      case .tooLong:
        enqueue("! line too long (max \(Self.maximumLineLength) bytes)", to: client)
      case .line(let text):
        if client.name == nil { join(client, as: text) } else { say(text, from: client) }
      }
    }
    flush()
  }

  private func join(_ client: Client, as name: String) {
    let allowed = name.utf8.allSatisfy { byte in
      (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
    }
    let refusal: String? =
      if name.isEmpty || name.utf8.count > Self.maximumNameLength || !allowed {
        "! invalid name: use 1 to \(Self.maximumNameLength) letters, digits, '-', '_' or '.'"
      } else if clients.values.contains(where: { $0.name == name }) {
        "! name taken: \(name)"
      } else {
        nil
      }
    if let refusal {
      // The socket buffer of a new connection is empty: one send delivers the refusal.
      enqueue(refusal, to: client)
      write(client)
      drop(client)
      return
    }
    client.name = name
    enqueue("* welcome \(name)", to: client)
    for line in greeting { enqueue(line, to: client) }
    if echoesJoin { enqueue("* \(name) joined", to: client) }
    broadcast("* \(name) joined", except: client)
    log?("\(name) joined")
  }

  private func say(_ text: String, from client: Client) {
    guard !text.isEmpty, let name = client.name else { return }
    broadcast("\(name): \(text)", except: client)
  }

  private func broadcast(_ line: String, except sender: Client) {
    for client in clients.values where client !== sender && client.name != nil {
      enqueue(line, to: client)
    }
  }

  private func enqueue(_ line: String, to client: Client) {
    client.output.append(contentsOf: line.utf8)
    client.output.append(UInt8(ascii: "\n"))
    dirty.insert(client.id)
  }

  /// Writes every dirty client's output; drops the ones that are gone or too far behind
  /// (whose "left" notices make more output, hence the loop).
  private func flush() {
    while let id = dirty.popFirst() {
      guard let client = clients[id] else { continue }
      write(client)
      if client.broken || client.output.count - client.written > Self.maximumPendingOutput {
        drop(client)
      }
    }
  }

  /// Writes as much of `client`'s output as its socket takes; tries the rest again soon.
  private func write(_ client: Client) {
    while client.written < client.output.count {
      let count = client.output.withUnsafeBytes {
        Socket.send(client.fd, .init(rebasing: $0[client.written...]))
      }
      if count > 0 {
        client.written += count
      } else if count < 0 && errno == EINTR {
        continue
      } else if count < 0 && Socket.wouldBlock(errno) {
        retryWrite(client)
        return
      } else {
        client.broken = true
        return
      }
    }
    client.output.removeAll(keepingCapacity: true)
    client.written = 0
  }

  /// How soon ``retryWrite(_:)`` tries a full socket again.
  static let writeRetryInterval = DispatchTimeInterval.milliseconds(2)

  /// Tries `client`'s output again shortly. A write source would wake on the socket's
  /// event instead, but on Linux a write source beside the read source on one descriptor,
  /// armed and cancelled each time a busy client's socket fills, is the kind of churn that
  /// has crashed libdispatch's event loop (its epoll bookkeeping is shared per descriptor;
  /// seen once in the load test); a timer on the server's queue stays clear of it.
  private func retryWrite(_ client: Client) {
    guard !client.retryScheduled else { return }
    client.retryScheduled = true
    queue.asyncAfter(deadline: .now() + Self.writeRetryInterval) { [weak self, id = client.id] in
      guard let self, let client = clients[id] else { return }
      client.retryScheduled = false
      dirty.insert(id)
      flush()
    }
  }

  private func drop(_ client: Client) {
    guard clients.removeValue(forKey: client.id) != nil else { return }
    dirty.remove(client.id)
    client.close()
    if let name = client.name {
      broadcast("* \(name) left", except: client)
      log?("\(name) left")
    }
  }
}

/// One connected client; all of it belongs to the server's queue.
private final class Client {
  let id: Int
  let fd: Int32
  let readSource: DispatchSourceRead
  private var closing = false
  /// A retry of the output is already on its way (see `ChatServer.retryWrite`).
  var retryScheduled = false

  var name: String?
  var splitter = LineSplitter(limit: ChatServer.maximumLineLength)
  var output: [UInt8] = []
  /// How much of `output` has been sent.
  var written = 0
  /// A send failed for good (the peer reset the connection).
  var broken = false

  init(id: Int, fd: Int32, queue: DispatchQueue) {
    self.id = id
    self.fd = fd
    readSource = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
    readSource.setCancelHandler {
      #if os(Linux)
      Glibc.close(fd)
      #else
      Darwin.close(fd)
      #endif
    }
  }

  /// Closing sends a reset instead of an end of file: see ``abortOnClose()``.
  private var aborts = false
  /// Makes ``close()`` abortive: `SO_LINGER` with a zero timeout, and no `shutdown`, so the
  /// peer gets a reset (`ECONNRESET`) instead of an end of file.
  func abortOnClose() {
    var linger = linger(l_onoff: 1, l_linger: 0)
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout.size(ofValue: linger)))
    aborts = true
  }

  /// Ends the connection at once (the peer sees end of file, or a reset after
  /// ``abortOnClose()``) and cancels the read source; the descriptor is closed only once the
  /// source is done with it.
  func close() {
    guard !closing else { return }
    closing = true
    if !aborts { shutdown(fd, Int32(SHUT_RDWR)) }
    readSource.cancel()
  }
}
