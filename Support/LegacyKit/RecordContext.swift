import Dispatch
import Foundation

/// A store of records in the managed-object-context style: everything it holds belongs to
/// its private serial queue, and callers reach it through ``perform(_:)``.
///
/// Legacy code never touches the records directly: it writes
/// `context.perform { context.insert("…") }`, and the block runs later on ``queue``.
/// A real context corrupts itself (or traps, with concurrency debugging on) when its
/// records are touched from any other thread. This one keeps working, so tests can grade
/// the mistake, but counts every such access in ``offQueueAccesses``.
public final class RecordContext: @unchecked Sendable {
  /// The context's private serial queue: the only place its records may be touched.
  public let queue: DispatchQueue
  private let key = DispatchSpecificKey<Int>()
  private let marker: Int
  private let lock = NSLock()
  private var storage: [String] = []
  private var violations = 0
  private var readsOffQueue = 0
  private static let counter = NSLock()
  private static var lastMarker = 0

  public init(label: String = "RecordContext") {
    queue = DispatchQueue(label: label)
    RecordContext.counter.lock()
    RecordContext.lastMarker += 1
    marker = RecordContext.lastMarker
    RecordContext.counter.unlock()
    queue.setSpecific(key: key, value: marker)
  }

  /// Runs `work` later, on the context's queue, after every block submitted before it.
  public func perform(_ work: @escaping () -> Void) {
    let box = UncheckedSendable(work)
    queue.async { box.value() }
  }

  /// True when the caller is running on the context's queue.
  public var isOnQueue: Bool {
    DispatchQueue.getSpecific(key: key) == marker
  }

  /// Adds a record. Only on the context's queue.
  public func insert(_ record: String) {
    let onQueue = isOnQueue
    lock.lock()
    if !onQueue { violations += 1 }
    storage.append(record)
    lock.unlock()
  }

  /// Every record, in the order they were inserted. Only on the context's queue.
  public var records: [String] {
    let onQueue = isOnQueue
    lock.lock()
    defer { lock.unlock() }
    if !onQueue {
      violations += 1
      readsOffQueue += 1
    }
    return storage
  }

  /// How many times the records were touched from outside the context's queue. Reading
  /// this is allowed anywhere.
  public var offQueueAccesses: Int {
    lock.lock()
    defer { lock.unlock() }
    return violations
  }

  /// How many of ``offQueueAccesses`` were reads of ``records`` (the rest are inserts), so
  /// a test can say which kind of access strayed.
  public var offQueueReads: Int {
    lock.lock()
    defer { lock.unlock() }
    return readsOffQueue
  }
}
