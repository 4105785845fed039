#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A POSIX call that failed, with its `errno`.
public struct SocketError: Error, Equatable, CustomStringConvertible {
  /// The call that failed, e.g. `"bind"`.
  public let operation: String
  /// The `errno` it set, e.g. `ECONNREFUSED`.
  public let code: Int32

  public init(_ operation: String, code: Int32 = errno) {
    self.operation = operation
    self.code = code
  }

  public var description: String {
    "\(operation) failed: \(String(cString: strerror(code))) (errno \(code))"
  }
}

/// The few socket calls ChatKit needs, the same on Linux and macOS.
enum Socket {
  /// A new non-blocking IPv4 TCP socket that never raises `SIGPIPE`.
  static func makeTCP() throws -> Int32 {
    #if os(Linux)
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
    let fd = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard fd >= 0 else { throw SocketError("socket") }
    #if !os(Linux)
    var on: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
    #endif
    do {
      try setNonBlocking(fd)
    } catch {
      close(fd)
      throw error
    }
    return fd
  }

  static func setNonBlocking(_ fd: Int32) throws {
    let flags = fcntl(fd, F_GETFL, 0)
    guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) >= 0 else {
      throw SocketError("fcntl")
    }
  }

  /// `host:port` as an IPv4 address, or nil if `host` is not a dotted IPv4 literal.
  static func address(host: String, port: UInt16) -> sockaddr_in? {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
    #if !os(Linux)
    address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
    #endif
    return address
  }

  static func bind(_ fd: Int32, to address: sockaddr_in) -> Int32 {
    var address = address
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        #if os(Linux)
        Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        #else
        Darwin.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        #endif
      }
    }
  }

  static func connect(_ fd: Int32, to address: sockaddr_in) -> Int32 {
    var address = address
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        #if os(Linux)
        Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        #else
        Darwin.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        #endif
      }
    }
  }

  /// The port the kernel chose for a socket bound to port 0.
  static func localPort(_ fd: Int32) throws -> UInt16 {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let status = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard status == 0 else { throw SocketError("getsockname") }
    return UInt16(bigEndian: address.sin_port)
  }

  /// The pending error of a socket whose non-blocking `connect` has finished (0 if none).
  static func pendingError(_ fd: Int32) -> Int32 {
    var code: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length) == 0 else { return errno }
    return code
  }

  /// `send` without `SIGPIPE`: the byte count, or -1 with `errno` set.
  static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
    #if os(Linux)
    return Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
    #else
    return Darwin.send(fd, bytes.baseAddress, bytes.count, 0)
    #endif
  }

  /// Whether `fd` is readable, at end of file, or in error, right now (`poll`, no wait).
  static func hasEvents(_ fd: Int32) -> Bool {
    var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    return poll(&entry, 1, 0) == 1 && entry.revents != 0
  }

  /// True for the `errno` values that mean "try again later", not "broken".
  static func wouldBlock(_ code: Int32) -> Bool {
    code == EAGAIN || code == EWOULDBLOCK || code == EINTR
  }
}

/// Splits a byte stream into lines, bounding how much of an unfinished line it keeps.
///
/// A line longer than `limit` bytes (not counting the newline) is reported once, as
/// `.tooLong`, and its remaining bytes are skipped up to the next newline; the splitter
/// never holds more than `limit` bytes. A trailing `\r` is removed, so `\r\n` works too.
struct LineSplitter {
  enum Piece: Equatable {
    case line(String)
    case tooLong
  }

  let limit: Int
  private var partial: [UInt8] = []
  private var skipping = false

  init(limit: Int) { self.limit = limit }

  /// Feeds `bytes` and returns the complete lines (and refusals) they finish, in order.
  mutating func feed(_ bytes: UnsafeRawBufferPointer) -> [Piece] {
    var pieces: [Piece] = []
    var start = 0
    for index in 0..<bytes.count where bytes[index] == UInt8(ascii: "\n") {
      let segment = bytes[start..<index]
      start = index + 1
      if skipping {
        skipping = false
        continue
      }
      var count = partial.count + segment.count
      if count > 0, (segment.last ?? partial.last) == UInt8(ascii: "\r") { count -= 1 }
      if count > limit {
        pieces.append(.tooLong)
      } else {
        partial.append(contentsOf: segment)
        if partial.last == UInt8(ascii: "\r") { partial.removeLast() }
        pieces.append(.line(String(decoding: partial, as: UTF8.self)))
      }
      partial.removeAll(keepingCapacity: true)
    }
    if !skipping && start < bytes.count {
      let rest = bytes[start...]
      // One byte of slack for a "\r" that the next read's "\n" may follow.
      if partial.count + rest.count > limit + 1 {
        pieces.append(.tooLong)
        partial.removeAll(keepingCapacity: true)
        skipping = true
      } else {
        partial.append(contentsOf: rest)
      }
    }
    return pieces
  }
}
