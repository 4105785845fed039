import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a ``ChatConnection`` operation failed or the connection ended.
public enum ChatConnectionError: Error, Equatable, Sendable {
  /// `host` is not a dotted IPv4 address such as `127.0.0.1`.
  case invalidAddress(String)
  /// ``ChatConnection/connect(host:port:name:completion:)`` was called a second time; a
  /// connection object connects once.
  case alreadyUsed
  /// The server refused the name; the associated text is its `! …` line.
  case rejected(String)
  /// ``ChatConnection/disconnect()`` was called before the operation finished.
  case cancelled
  /// ``ChatConnection/send(_:completion:)`` before the connection was established, or
  /// after it ended.
  case notConnected
  /// The line holds a newline, or is longer than ``ChatServer/maximumLineLength`` bytes.
  case invalidLine
  /// The server closed the connection.
  case closedByServer
  /// A socket call failed; `ECONNREFUSED` when no server listens on the port.
  case socket(SocketError)
}

/// Receives a ``ChatConnection``'s incoming lines and its end.
///
/// Both methods are called on the connection's callback queue, one at a time, in order.
public protocol ChatConnectionDelegate: AnyObject {
  /// A line from the server, without its newline: `NAME: text`, `* NAME joined`,
  /// `* NAME left`, or `! …` (an error about something this client sent).
  func chatConnection(_ connection: ChatConnection, didReceive line: String)

  /// The connection ended: `error` is nil after ``ChatConnection/disconnect()``, otherwise
  /// ``ChatConnectionError/closedByServer`` or ``ChatConnectionError/socket(_:)``. Called
  /// at most once, and only for a connection that was established; no line follows it.
  func chatConnection(_ connection: ChatConnection, didDisconnectWithError error: Error?)
}

/// A client for ``ChatServer``, in the style of the classic networking APIs: a completion
/// handler for connecting and for each send, and a delegate for everything that arrives.
///
///     let connection = ChatConnection()
///     connection.delegate = self
///     connection.connect(port: 4000, name: "ada") { error in … }
///     connection.send("hello") { error in … }
///     connection.disconnect()
///
/// Every completion handler and delegate call runs on `callbackQueue` (by default a private
/// serial queue, so on some arbitrary thread), in the order the events happened. Each
/// completion handler is called exactly once. A line goes to the delegate that was set when
/// the line was read from the socket: set it before connecting, or lines that came with the
/// welcome are lost.
public final class ChatConnection: @unchecked Sendable {
  private enum State {
    case idle, connecting, connected, closed
  }

  /// The object that receives incoming lines and the end of the connection. Held weakly.
  public weak var delegate: ChatConnectionDelegate? {
    get { lock.withLock { _delegate } }
    set { lock.withLock { _delegate = newValue } }
  }

  private let lock = NSLock()
  private weak var _delegate: ChatConnectionDelegate?
  /// Runs each callback, in order: `callbackQueue.async` unless a test chose otherwise.
  private let schedule: @Sendable (@escaping @Sendable () -> Void) -> Void
  private let queue = DispatchQueue(label: "ChatKit.ChatConnection")

  // Everything below belongs to `queue`.
  private var state = State.idle
  private var fd: Int32 = -1
  private var readSource: DispatchSourceRead?
  private var writeSource: DispatchSourceWrite?
  /// Reads whenever `poll` finds something: see ``ChatServer``'s sweep for why.
  private var sweeper: DispatchSourceTimer?
  private var liveSources = 0
  private var connectCompletion: ((Error?) -> Void)?
  private var splitter = LineSplitter(limit: 64 * 1024)
  private var output: [UInt8] = []
  /// Bytes of `output` already sent, and the sends waiting for theirs to go: each
  /// completes when `sentTotal` reaches its `end`.
  private var written = 0
  private var sentTotal = 0
  private var queuedTotal = 0
  private var pendingSends: [(end: Int, completion: (Error?) -> Void)] = []
  /// Lines taken for sending since the connection was made, counting up only (under `lock`,
  /// so reading it never waits for `queue`).
  private var linesTaken = 0

  /// How many lines `send(_:completion:)` has taken for sending (not refused) so far: for
  /// tests, which cannot otherwise tell that a send has reached the connection before they
  /// do something next.
  var linesTakenForSending: Int { lock.withLock { linesTaken } }

  /// For tests: a line that starts with this is held 20 ms on the calling thread before it
  /// is queued, as a thread that is preempted at that moment would be. Lines sent one after
  /// another, each once the one before has gone, keep their order; lines sent from several
  /// tasks at once then overtake each other, as they may on any busy machine.
  static let slowToQueuePrefix = "slow to queue: "

  /// For tests: a line that starts with this is held on its way into the connection, without
  /// holding a thread (`send` returns at once), until `send` is called again on this
  /// connection, or a second has passed. A send made while it waits is queued first, and the
  /// held line right after it. Lines sent one after another, each once the one before has
  /// gone, keep their order (the next send comes only after the held line's completion); a
  /// line sent from another task while the held one is on its way overtakes it, every time.
  static let heldUntilNextSendPrefix = "held until the next send: "

  /// The line held by ``heldUntilNextSendPrefix``, numbered so that its time-out lets go of
  /// that one only (under `lock`).
  private var heldSend: (number: Int, queue: () -> Void)?
  private var heldSends = 0

  /// For tests: a line that starts with this is taken for sending, and then the connection
  /// is lost as if the server had reset it while the line was being written: its waiting
  /// sends, this one included, fail with `.socket(ECONNRESET)`, and only then does the
  /// delegate hear of the loss, as with any loss that finds a line on its way.
  static let resetWhileSentPrefix = "reset while sent: "

  /// A connection that calls its delegate and completion handlers on `callbackQueue`.
  public init(
    callbackQueue: DispatchQueue = DispatchQueue(label: "ChatKit.ChatConnection.callbacks")
  ) {
    schedule = { callbackQueue.async(execute: $0) }
  }

  /// A connection that hands each delegate call and completion handler, in order, to
  /// `schedule`, which must run them one at a time in that order. For tests: a scheduler
  /// that runs them on the caller's own thread, behind whatever runs there (as a framework
  /// calling back on the main queue does), shows whether the caller blocks that thread
  /// while it waits for a completion.
  public init(callbacksVia schedule: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
    self.schedule = schedule
  }

  /// Connects to the server at `host:port` and joins as `name`.
  ///
  /// `completion` receives nil once the server has welcomed the name (from then on, the
  /// delegate receives what others say), or the error: ``ChatConnectionError/rejected(_:)``
  /// for a bad or taken name, ``ChatConnectionError/socket(_:)`` with `ECONNREFUSED` when
  /// nothing listens there, ``ChatConnectionError/cancelled`` if ``disconnect()`` came
  /// first. After an error the delegate hears nothing.
  public func connect(
    host: String = "127.0.0.1", port: UInt16, name: String,
    completion: @escaping (Error?) -> Void
  ) {
    queue.async { [self] in
      guard state == .idle else {
        return callback { completion(ChatConnectionError.alreadyUsed) }
      }
      guard let address = Socket.address(host: host, port: port) else {
        state = .closed
        return callback { completion(ChatConnectionError.invalidAddress(host)) }
      }
      guard !name.contains(where: \.isNewline) else {
        state = .closed
        return callback { completion(ChatConnectionError.invalidLine) }
      }
      state = .connecting
      connectCompletion = completion
      do {
        fd = try Socket.makeTCP()
      } catch {
        return fail(.socket(error as! SocketError))
      }
      if Socket.connect(fd, to: address) != 0 && errno != EINPROGRESS {
        // The descriptor is not watched yet: close it here.
        let error = SocketError("connect")
        closeDescriptor(fd)
        fd = -1
        return fail(.socket(error))
      }
      let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
      source.setEventHandler { [weak self] in self?.readAvailable() }
      source.setCancelHandler { [self] in sourceCancelled() }
      liveSources += 1
      readSource = source
      source.resume()
      let timer = DispatchSource.makeTimerSource(queue: queue)
      timer.schedule(
        deadline: .now() + ChatServer.sweepInterval, repeating: ChatServer.sweepInterval)
      timer.setEventHandler { [weak self] in
        guard let self, self.fd >= 0, Socket.hasEvents(self.fd) else { return }
        self.readAvailable()
      }
      sweeper = timer
      timer.resume()
      // The name goes out as soon as the socket is connected; the write source says when.
      append(name)
      waitUntilWritable()
    }
  }

  /// Sends `line` to the other clients.
  ///
  /// `completion`, if given, receives nil once the whole line has been handed to the
  /// operating system, or the error: ``ChatConnectionError/notConnected``,
  /// ``ChatConnectionError/invalidLine``, or whatever ended the connection first.
  public func send(_ line: String, completion: ((Error?) -> Void)? = nil) {
    if line.hasPrefix(Self.slowToQueuePrefix) { usleep(20_000) }
    let waiting = lock.withLock { () -> (() -> Void)? in
      defer { heldSend = nil }
      return heldSend?.queue
    }
    if line.hasPrefix(Self.heldUntilNextSendPrefix) {
      let number = lock.withLock { () -> Int in
        heldSends += 1
        heldSend = (heldSends, { self.queueSend(line, completion) })
        return heldSends
      }
      DispatchQueue.global().asyncAfter(deadline: .now() + 1) { [self] in
        let held = lock.withLock { () -> (() -> Void)? in
          guard let held = heldSend, held.number == number else { return nil }
          heldSend = nil
          return held.queue
        }
        held?()
      }
    } else {
      queueSend(line, completion)
    }
    waiting?()
  }

  private func queueSend(_ line: String, _ completion: ((Error?) -> Void)?) {
    queue.async { [self] in
      let completion = completion ?? { _ in }
      guard state == .connected else {
        return callback { completion(ChatConnectionError.notConnected) }
      }
      guard !line.contains(where: \.isNewline), line.utf8.count <= ChatServer.maximumLineLength
      else {
        return callback { completion(ChatConnectionError.invalidLine) }
      }
      append(line)
      lock.withLock { linesTaken += 1 }
      pendingSends.append((queuedTotal, completion))
      if line.hasPrefix(Self.resetWhileSentPrefix) {
        return lost(.socket(SocketError("send", code: ECONNRESET)))
      }
      writeOutput()
    }
  }

  /// Closes the connection. A connect in progress fails with
  /// ``ChatConnectionError/cancelled``, as do sends not yet written; an established
  /// connection's delegate receives `didDisconnectWithError(nil)`. Before any connect it
  /// closes the connection for good: a connect after it fails with
  /// ``ChatConnectionError/alreadyUsed``. Does nothing if the connection has already ended.
  public func disconnect() {
    queue.async { [self] in
      switch state {
      case .idle: state = .closed
      case .connecting: fail(.cancelled)
      case .connected: end(with: nil, sendsFailWith: .cancelled)
      case .closed: break
      }
    }
  }

  // MARK: - Events (all on `queue`)

  private func callback(_ body: @escaping @Sendable () -> Void) {
    schedule(body)
  }

  private func append(_ line: String) {
    output.append(contentsOf: line.utf8)
    output.append(UInt8(ascii: "\n"))
    queuedTotal += line.utf8.count + 1
  }

  private func readAvailable() {
    guard state == .connecting || state == .connected else { return }
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    if count < 0 && Socket.wouldBlock(errno) { return }
    if count == 0 { return lost(.closedByServer) }
    if count < 0 { return lost(.socket(SocketError("read"))) }
    let pieces = buffer.withUnsafeBytes { splitter.feed(.init(rebasing: $0[..<count])) }
    // The delegate when the data arrived hears every line of it, as with a framework that
    // snapshots its delegate when data arrives. Taken once, before the welcome's completion
    // is scheduled, so a delegate set in that completion misses the lines read with the
    // welcome, every time, however the threads are scheduled.
    let receiver = delegate
    for case .line(let line) in pieces {
      switch state {
      case .connecting:
        if line.hasPrefix("* welcome ") {
          state = .connected
          let completion = connectCompletion
          connectCompletion = nil
          callback { completion?(nil) }
        } else {
          return fail(.rejected(line))
        }
      case .connected:
        callback { [self, weak receiver] in receiver?.chatConnection(self, didReceive: line) }
      case .idle, .closed:
        return
      }
    }
  }

  private func waitUntilWritable() {
    guard writeSource == nil, let readSource, !readSource.isCancelled else { return }
    let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
    source.setEventHandler { [weak self] in self?.writeOutput() }
    source.setCancelHandler { [self] in sourceCancelled() }
    liveSources += 1
    writeSource = source
    source.resume()
  }

  private func writeOutput() {
    guard state == .connecting || state == .connected else { return }
    if state == .connecting {
      let code = Socket.pendingError(fd)
      if code != 0 { return fail(.socket(SocketError("connect", code: code))) }
    }
    while written < output.count {
      let count = output.withUnsafeBytes { Socket.send(fd, .init(rebasing: $0[written...])) }
      if count > 0 {
        written += count
        sentTotal += count
      } else if count < 0 && errno == EINTR {
        continue
      } else if count < 0 && Socket.wouldBlock(errno) {
        break
      } else {
        return lost(.socket(SocketError("send")))
      }
    }
    while let first = pendingSends.first, first.end <= sentTotal {
      pendingSends.removeFirst()
      callback { first.completion(nil) }
    }
    if written == output.count {
      output.removeAll(keepingCapacity: true)
      written = 0
      writeSource?.cancel()
      writeSource = nil
    } else {
      waitUntilWritable()
    }
  }

  /// The connection failed before it was established.
  private func fail(_ error: ChatConnectionError) {
    let completion = connectCompletion
    connectCompletion = nil
    close()
    callback { completion?(error) }
  }

  /// The established connection broke.
  private func lost(_ error: ChatConnectionError) {
    if state == .connecting {
      // A refused or reset connect shows up as a failed read or send.
      if case .socket(let failure) = error {
        return fail(.socket(SocketError("connect", code: failure.code)))
      }
      return fail(error)
    }
    end(with: error, sendsFailWith: error)
  }

  private func end(with error: ChatConnectionError?, sendsFailWith sendError: ChatConnectionError) {
    let sends = pendingSends
    pendingSends.removeAll()
    close()
    callback { [self] in
      for send in sends { send.completion(sendError) }
      delegate?.chatConnection(self, didDisconnectWithError: error)
    }
  }

  private func close() {
    state = .closed
    sweeper?.cancel()
    sweeper = nil
    guard fd >= 0 else { return }
    shutdown(fd, Int32(SHUT_RDWR))
    readSource?.cancel()
    writeSource?.cancel()
    writeSource = nil
  }

  private func sourceCancelled() {
    liveSources -= 1
    if liveSources == 0 && state == .closed && fd >= 0 {
      closeDescriptor(fd)
      fd = -1
    }
  }
}

/// `close(2)`, which the class's own methods would otherwise shadow.
private func closeDescriptor(_ fd: Int32) {
  #if os(Linux)
  _ = Glibc.close(fd)
  #else
  _ = Darwin.close(fd)
  #endif
}
