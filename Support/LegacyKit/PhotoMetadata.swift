import Foundation
import Synchronization

// A photo-metadata library from before Swift's concurrency checking (exercise 10.5): built in
// the Swift 5 language mode, and it says nothing about `Sendable`. One of its types is safe
// to share between threads and the other is not; only their documentation tells which.

/// The EXIF metadata of one photo: the camera that took it, when, and the picture's size.
///
/// Immutable: every property is a constant of a value type, set once by the initializer, so
/// any number of threads can read a record at the same time.
public final class ExifRecord {
  /// The camera's make and model, as the camera wrote it ("Fujifilm X100V").
  public let cameraModel: String
  /// When the picture was taken.
  public let capturedAt: Date
  /// The picture's width, in pixels.
  public let pixelWidth: Int
  /// The picture's height, in pixels.
  public let pixelHeight: Int

  public init(cameraModel: String, capturedAt: Date, pixelWidth: Int, pixelHeight: Int) {
    self.cameraModel = cameraModel
    self.capturedAt = capturedAt
    self.pixelWidth = pixelWidth
    self.pixelHeight = pixelHeight
  }

  /// Reads the EXIF block at the start of a photo file; `nil` when the file has none.
  ///
  /// Thread-safe: any number of files can be read at the same time, one per thread. Reading
  /// takes a moment, so an app that imports many photos reads them in parallel.
  public convenience init?(reading file: Data) {
    photoMetadataReads.enter(lingering: .milliseconds(10))
    defer { photoMetadataReads.leave() }
    guard file.starts(with: Data("EXIF\n".utf8)), let end = file.firstIndex(of: 0),
      let text = String(data: file[file.startIndex..<end], encoding: .utf8)
    else { return nil }
    let fields = text.split(separator: "\n", omittingEmptySubsequences: false)
    guard fields.count == 5, let seconds = Double(fields[2]), let width = Int(fields[3]),
      let height = Int(fields[4])
    else { return nil }
    photoMetadataHolds.pass(cameraModel: String(fields[1]))
    self.init(
      cameraModel: String(fields[1]), capturedAt: Date(timeIntervalSince1970: seconds),
      pixelWidth: width, pixelHeight: height)
  }

  /// This record as the EXIF block a camera writes at the start of a photo file.
  public var exifBlock: Data {
    let fields = [
      "EXIF", cameraModel, String(capturedAt.timeIntervalSince1970), String(pixelWidth),
      String(pixelHeight),
    ]
    return Data(fields.joined(separator: "\n").utf8) + [0]
  }

  /// Test support: how many reads so far, in this process, found another read under way on
  /// another thread. A read that is alone waits a few milliseconds for company before it
  /// ends, so an app that reads its files in parallel shows it here on every run (given two
  /// cores), and one that reads them one at a time never does.
  public static var readsInParallel: Int { photoMetadataReads.overlaps }

  /// Test support: holds every read of a file taken with `cameraModel`, on the thread that
  /// reads it, until ``ExifReadHold/release()`` (or for 5 seconds at most, so that nothing
  /// waits for ever). With it a test sees an import that is half done: some of its files read,
  /// one still being read.
  public static func holdReads(ofCamera cameraModel: String) -> ExifReadHold {
    photoMetadataHolds.hold(cameraModel)
    return ExifReadHold(cameraModel: cameraModel)
  }
}

/// Test support: the reads of one camera's files that ``ExifRecord/holdReads(ofCamera:)``
/// holds.
public struct ExifReadHold: Sendable {
  /// The camera whose files' reads are held.
  public let cameraModel: String

  /// How many reads are waiting for the hold to be released now.
  public var readsWaiting: Int { photoMetadataHolds.waiting(cameraModel) }

  /// Lets the held reads go on, and the later reads of that camera's files pass.
  public func release() { photoMetadataHolds.release(cameraModel) }
}

/// An index of photo metadata: the record of each photo, by name, and the photos each camera
/// took, oldest first.
///
/// Not thread-safe. Like most collections, it must be used by one thread at a time: two
/// threads inside it at once corrupt it. Calls made from inside its ``changeHandler``, on
/// the thread running the handler, are not concurrent and are fine.
///
/// (This fake keeps working when it is misused, so that tests can report the mistake, and
/// counts each time a thread came in while another thread was inside: ``concurrentEntries``.)
public final class MetadataIndex {
  /// Test support: called at the start of every ``add(_:forPhoto:)``, of every index, on
  /// the thread that adds, until ``AddWatch/end()``: a test sees where adds run.
  public static func watchAdds(_ body: @escaping @Sendable () -> Void) -> AddWatch {
    let id = addWatchers.withLock { watchers in
      let id = (watchers.keys.max() ?? 0) + 1
      watchers[id] = body
      return id
    }
    return AddWatch(id: id)
  }

  /// Ends a ``watchAdds(_:)``.
  public struct AddWatch: Sendable {
    let id: Int
    public func end() { _ = MetadataIndex.addWatchers.withLock { $0.removeValue(forKey: id) } }
  }

  fileprivate static let addWatchers = Mutex<[Int: @Sendable () -> Void]>([:])

  private let storage = NSLock()
  private var records: [String: ExifRecord] = [:]

  public init() {}

  /// Called after each ``add(_:forPhoto:)``, synchronously, on the thread that called it and
  /// before it returns, with the index and the record just added.
  public var changeHandler: ((MetadataIndex, ExifRecord) -> Void)?

  /// Adds the record of the photo named `name`, replacing any it had, then calls
  /// ``changeHandler``.
  public func add(_ record: ExifRecord, forPhoto name: String) {
    MetadataIndex.addWatchers.withLock { $0 }.values.forEach { $0() }
    photoMetadataEntries.enter(lingering: .milliseconds(10))
    defer { photoMetadataEntries.leave() }
    storage.lock()
    records[name] = record
    storage.unlock()
    changeHandler?(self, record)
  }

  /// The record of the photo named `name`, if the index has one.
  public func record(forPhoto name: String) -> ExifRecord? {
    photoMetadataEntries.enter()
    defer { photoMetadataEntries.leave() }
    storage.lock()
    defer { storage.unlock() }
    return records[name]
  }

  /// The names of the photos taken with `cameraModel`, oldest first (by name, for photos
  /// taken at the same moment).
  public func photos(takenWith cameraModel: String) -> [String] {
    photoMetadataEntries.enter()
    defer { photoMetadataEntries.leave() }
    storage.lock()
    defer { storage.unlock() }
    return records.filter { $0.value.cameraModel == cameraModel }
      .sorted { ($0.value.capturedAt, $0.key) < ($1.value.capturedAt, $1.key) }
      .map(\.key)
  }

  /// How many photos the index holds.
  public var count: Int {
    photoMetadataEntries.enter()
    defer { photoMetadataEntries.leave() }
    storage.lock()
    defer { storage.unlock() }
    return records.count
  }

  /// Test support: how many times so far, in this process and across all indexes, a thread
  /// came into an index while another thread was inside one. An ``add(_:forPhoto:)`` that is
  /// alone waits a few milliseconds for company before it goes on, so code that lets two
  /// threads in at once shows it here on every run, not once in a while.
  public static var concurrentEntries: Int { photoMetadataEntries.overlaps }
}

/// The reads of EXIF blocks under way, on any thread.
private let photoMetadataReads = PhotoMetadataOverlaps()
/// The calls into any `MetadataIndex` under way, on any thread.
private let photoMetadataEntries = PhotoMetadataOverlaps()

/// The cameras whose files' reads are held, and the reads waiting for each.
private let photoMetadataHolds = PhotoMetadataHolds()

/// Holds reads until a test lets them go: ``ExifRecord/holdReads(ofCamera:)``.
private final class PhotoMetadataHolds {
  private let condition = NSCondition()
  private var held: Set<String> = []
  private var waitingReads: [String: Int] = [:]

  func hold(_ cameraModel: String) {
    condition.lock()
    defer { condition.unlock() }
    held.insert(cameraModel)
  }

  func release(_ cameraModel: String) {
    condition.lock()
    defer { condition.unlock() }
    held.remove(cameraModel)
    condition.broadcast()
  }

  func waiting(_ cameraModel: String) -> Int {
    condition.lock()
    defer { condition.unlock() }
    return waitingReads[cameraModel, default: 0]
  }

  /// Returns at once unless the camera's reads are held; then when they are let go, or after
  /// 5 seconds.
  func pass(cameraModel: String) {
    condition.lock()
    defer { condition.unlock() }
    guard held.contains(cameraModel) else { return }
    waitingReads[cameraModel, default: 0] += 1
    defer { waitingReads[cameraModel, default: 0] -= 1 }
    let deadline = Date(timeIntervalSinceNow: 5)
    while held.contains(cameraModel), condition.wait(until: deadline) {}
  }
}

/// Sees threads that are inside the same kind of call at the same time.
///
/// A thread's nested calls (an index queried from its own change handler) count as one
/// visit. A call that lingers, when it is alone, waits until another thread comes in or its
/// time is up: a race that real code loses once a month is lost here on every run.
private final class PhotoMetadataOverlaps {
  private let condition = NSCondition()
  private var visitors: [(thread: pthread_t, depth: Int)] = []
  private var seen = 0

  /// How many times a thread came in while another was inside.
  var overlaps: Int {
    condition.lock()
    defer { condition.unlock() }
    return seen
  }

  func enter(lingering linger: Duration = .zero) {
    let me = pthread_self()
    condition.lock()
    defer { condition.unlock() }
    if let mine = visitors.firstIndex(where: { pthread_equal($0.thread, me) != 0 }) {
      visitors[mine].depth += 1
      return
    }
    if !visitors.isEmpty {
      seen += 1
      condition.broadcast()
    }
    visitors.append((me, 1))
    guard linger > .zero, visitors.count == 1 else { return }
    let (seconds, attoseconds) = linger.components
    let deadline = Date(timeIntervalSinceNow: Double(seconds) + Double(attoseconds) / 1e18)
    let before = seen
    while seen == before, condition.wait(until: deadline) {}
  }

  func leave() {
    let me = pthread_self()
    condition.lock()
    defer { condition.unlock() }
    guard let mine = visitors.firstIndex(where: { pthread_equal($0.thread, me) != 0 }) else {
      return
    }
    visitors[mine].depth -= 1
    if visitors[mine].depth == 0 { visitors.remove(at: mine) }
  }
}
