import Dispatch
import Foundation

/// A photo of the library, at one revision: each edit of the photo makes a new revision.
public struct LibraryPhoto: Sendable, Hashable, CustomStringConvertible {
  public let id: String
  public let revision: Int

  public init(id: String, revision: Int) {
    self.id = id
    self.revision = revision
  }

  public var description: String { "\(id)@\(revision)" }
}

/// One change of a ``PhotoLibrary``, as its observers hear it (the shape of PhotoKit's
/// `PHChange`): the photos that changed, in the order they changed.
///
/// Not thread-safe: it works out its photos the first time they are asked for and keeps
/// them, with no lock. Use it on the queue it was handed over on, inside the observer's
/// method.
public final class PhotoLibraryChange {
  private let raw: [(id: String, revision: Int)]
  private var worked: [LibraryPhoto]?

  init(_ photos: [LibraryPhoto]) {
    raw = photos.map { ($0.id, $0.revision) }
  }

  /// The photos that changed, in order, each at its new revision.
  public var changedPhotos: [LibraryPhoto] {
    if let worked { return worked }
    let photos = raw.map { LibraryPhoto(id: $0.id, revision: $0.revision) }
    worked = photos
    return photos
  }
}

/// Told about the changes of a ``PhotoLibrary``.
///
/// Called on the library's change queue, a background queue (never the main queue), one
/// change at a time, in the order they happened. The library waits while the method runs:
/// return quickly.
public protocol PhotoLibraryChangeObserver: AnyObject {
  func photoLibraryDidChange(_ change: PhotoLibraryChange)
}

/// The device's photo library, simulated: it tells its observers about changed photos on
/// a change queue of its own. Observers are held weakly. Thread-safe: call it from any
/// thread.
///
/// There is no real library: tests play its part with ``photosChanged(_:)`` and wait for it
/// with ``whenReported(_:)``.
public final class PhotoLibrary: @unchecked Sendable {
  private final class Registration {
    weak var observer: PhotoLibraryChangeObserver?
    init(_ observer: PhotoLibraryChangeObserver) { self.observer = observer }
  }

  private let lock = NSLock()
  private let changeQueue = DispatchQueue(label: "PhotoLibrary.changes")
  private var registrations: [Registration] = []
  private var inside = 0
  private var reported = 0

  public init() {}

  /// Registers `observer`, held weakly, for the changes that come after this call.
  public func register(_ observer: PhotoLibraryChangeObserver) {
    lock.lock()
    defer { lock.unlock() }
    registrations.append(Registration(observer))
  }

  /// How many observer calls are running right now (started, not returned).
  public var observersInside: Int {
    lock.lock()
    defer { lock.unlock() }
    return inside
  }

  /// How many changes have been reported to every observer so far (their methods returned).
  public var changesReported: Int {
    lock.lock()
    defer { lock.unlock() }
    return reported
  }

  // MARK: The library's side, played by tests.

  /// The photos changed, in this order: each observer hears it on the change queue, as one
  /// change. Returns at once.
  public func photosChanged(_ photos: [LibraryPhoto]) {
    changeQueue.async {
      self.lock.lock()
      let observers = self.registrations.compactMap { $0.observer }
      self.inside += 1
      self.lock.unlock()
      for observer in observers {
        observer.photoLibraryDidChange(PhotoLibraryChange(photos))
      }
      self.lock.lock()
      self.inside -= 1
      self.reported += 1
      self.lock.unlock()
    }
  }

  /// Calls `done` on the change queue once every change asked for before this call has been
  /// reported (each observer's method returned).
  public func whenReported(_ done: @escaping @Sendable () -> Void) {
    changeQueue.async(execute: done)
  }
}
