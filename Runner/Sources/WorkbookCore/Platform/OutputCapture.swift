import Foundation
import Synchronization

/// What a child process printed on one stream, kept within a fixed budget: the first
/// `headLimit` bytes and the last `tailLimit` bytes, with a count of what was dropped in
/// between. A test that prints gigabytes costs the runner at most `headLimit + 2 ×
/// tailLimit` bytes of memory and nothing on disk.
///
/// It also watches the stream for the first sign of a crash, so the runner can stop a
/// process whose crash reporter hangs without waiting for the time limit.
public final class OutputCapture: Sendable {
  /// Bytes kept from the start and from the end of each stream by default (1 MiB each).
  public static let defaultLimit = 1 << 20
  static let crashMarkers = ["Fatal error", "*** Program crashed", "*** Signal "]
  /// The line a test watchdog writes when it finds a thread blocked for good
  /// (``BlockedAnnouncement/marker``).
  static let blockedMarker = "workbook-blocked:"

  private struct State {
    var head: [UInt8] = []
    var tail: [UInt8] = []
    var total = 0
    /// The end of the previous chunk, so a crash marker split across two reads is found.
    var carry: [UInt8] = []
    var crashSeen = false
    var blockedSeen = false
  }

  public let headLimit: Int
  public let tailLimit: Int
  private let state = Mutex(State())

  public init(headLimit: Int = defaultLimit, tailLimit: Int = defaultLimit) {
    self.headLimit = max(0, headLimit)
    self.tailLimit = max(0, tailLimit)
  }

  /// Adds the next bytes the process printed.
  public func append(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { append($0) }
  }

  /// Adds the next bytes the process printed. Only byte copies and Foundation's search, so that even
  /// a debug build of the runner keeps up with a child printing as fast as it can.
  public func append(_ bytes: UnsafeRawBufferPointer) {
    guard !bytes.isEmpty else { return }
    state.withLock { state in
      state.total += bytes.count
      var rest = bytes[...]
      if state.head.count < headLimit {
        let taken = min(rest.count, headLimit - state.head.count)
        state.head.append(contentsOf: UnsafeRawBufferPointer(rebasing: rest.prefix(taken)))
        rest = rest.dropFirst(taken)
      }
      if !rest.isEmpty, tailLimit > 0 {
        state.tail.append(
          contentsOf: UnsafeRawBufferPointer(rebasing: rest.suffix(tailLimit)))
        // Trim in batches so appending stays cheap.
        if state.tail.count > 2 * tailLimit {
          state.tail.removeFirst(state.tail.count - tailLimit)
        }
      }
      if !state.crashSeen {
        var window = state.carry
        window.append(contentsOf: bytes)
        state.crashSeen = Self.markerData.contains { Self.find($0, in: window) }
        if !state.blockedSeen {
          state.blockedSeen = Self.find(Self.blockedMarkerData, in: window)
        }
        state.carry = Array(window.suffix(32))
      }
    }
  }

  private static let markerData = crashMarkers.map { Data($0.utf8) }
  private static let blockedMarkerData = Data(blockedMarker.utf8)

  private static func find(_ marker: Data, in window: [UInt8]) -> Bool {
    Data(window).range(of: marker) != nil
  }

  /// Every byte the process printed, kept or not.
  public var totalBytes: Int { state.withLock { $0.total } }

  /// Bytes printed but not kept.
  public var omittedBytes: Int {
    state.withLock { state in
      state.total - state.head.count - min(state.tail.count, tailLimit)
    }
  }

  /// True once the stream has shown "Fatal error", "*** Program crashed" or "*** Signal ".
  public var sawCrash: Bool { state.withLock { $0.crashSeen } }

  /// True once the stream has announced a blocked thread ("workbook-blocked:").
  public var sawBlocked: Bool { state.withLock { $0.blockedSeen } }

  /// What was kept: everything, or the start and the end with a line saying how much of
  /// the middle was left out.
  public var text: String {
    state.withLock { state in
      let tail = state.tail.suffix(tailLimit)
      let omitted = state.total - state.head.count - tail.count
      guard omitted > 0 else {
        return String(decoding: state.head + tail, as: UTF8.self)
      }
      return String(decoding: state.head, as: UTF8.self)
        + "\n[… output truncated: \(omitted) bytes left out …]\n"
        + String(decoding: tail, as: UTF8.self)
    }
  }

  /// The last `count` bytes kept, for progress markers such as SwiftPM's "[12/40]".
  public func recent(_ count: Int = 4096) -> String {
    state.withLock { state in
      let source = state.tail.isEmpty ? state.head : state.tail
      return String(decoding: source.suffix(count), as: UTF8.self)
    }
  }

  /// "20.0 MB", "512 bytes".
  public static func describe(bytes: Int) -> String {
    if bytes < 1024 { return "\(bytes) bytes" }
    if bytes < 1 << 20 { return String(format: "%.1f KB", Double(bytes) / 1024) }
    return String(format: "%.1f MB", Double(bytes) / Double(1 << 20))
  }
}
