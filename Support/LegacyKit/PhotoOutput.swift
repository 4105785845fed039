import Foundation

/// The errors a ``PhotoOutput`` reports.
public enum CameraError: Error, Equatable, Sendable {
  /// Another app is using the camera.
  case deviceBusy
  /// The sensor reported a fault while exposing the picture.
  case sensorFault
}

/// What the camera hands its delegate once a photo has been processed.
public struct CapturedPhoto: Sendable {
  private let fileData: Data?

  public init(fileData: Data?) {
    self.fileData = fileData
  }

  /// The photo as an image file, or `nil` when the camera produced none. The bytes are not
  /// checked: they may not be an image at all (``Image/init(fileData:)`` tells).
  public func fileDataRepresentation() -> Data? {
    fileData
  }
}

/// The delegate of one photo capture, in the AVFoundation style.
public protocol PhotoCaptureDelegate: AnyObject {
  /// The capture is over: `photo` holds the file if there is one, and `error` is set when
  /// the capture failed. Nothing prevents a file and an error from arriving together, or
  /// neither of them.
  func photoOutput(
    _ output: PhotoOutput, didFinishProcessingPhoto photo: CapturedPhoto, error: Error?)
}

/// A camera's photo output: ask it to capture, and it reports the processed photo to the
/// delegate you pass along.
///
/// Like AVFoundation's photo output, it holds that delegate **weakly**: keep it alive until
/// it has been told. Each capture takes the next of its scripted ``Outcome``s (the last one
/// repeats), and the script decides when, on which thread and how many times the delegate
/// is told. Thread-safe; it can capture any number of photos.
public final class PhotoOutput: @unchecked Sendable {
  /// What one capture produces.
  public enum Outcome: Sendable, CustomStringConvertible {
    /// A good photo: its file, no error.
    case photo(Image)
    /// The capture failed: no file, and the error.
    case failure(CameraError)
    /// No file and no error.
    case noData
    /// A file that is not an image (truncated by a full disk, say), and no error.
    case corruptData
    /// A file and an error together: the camera saved something, then reported a fault.
    case photoAndError(Image, CameraError)
    /// A file that is not an image and an error together: the camera wrote part of the
    /// file, then reported a fault.
    case corruptDataAndError(CameraError)

    public var description: String {
      switch self {
      case .photo(let image): return "photo \(image)"
      case .failure(let error): return "failure \(error)"
      case .noData: return "no data"
      case .corruptData: return "corrupt data"
      case .photoAndError(let image, let error): return "photo \(image) with error \(error)"
      case .corruptDataAndError(let error): return "corrupt data with error \(error)"
      }
    }
  }

  /// The file of a capture cut short: it starts like an image and is not one.
  private static let corruptFile = Data("LKIMG1\ntrunc".utf8)

  private let lock = NSLock()
  private let script: CallbackScript
  private var outcomes: [Outcome]
  private var captures = 0
  private var reports = 0
  private var reportsToNobody = 0

  /// - Parameters:
  ///   - outcomes: What each capture produces, in order; the last one repeats.
  ///   - script: When, on which thread and how many times the delegate is told.
  public init(outcomes: [Outcome], script: CallbackScript = .default) {
    precondition(!outcomes.isEmpty, "script at least one outcome")
    self.outcomes = outcomes
    self.script = script
  }

  /// How many times ``capturePhoto(delegate:)`` has been called.
  public var captureCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return captures
  }

  /// How many scripted reports are over: the delegate was called and returned, or there
  /// was no delegate left to call.
  public var reportCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return reports
  }

  /// How many scripted reports found no delegate: it had been freed before the report.
  public var reportsWithNoDelegate: Int {
    lock.lock()
    defer { lock.unlock() }
    return reportsToNobody
  }

  /// Takes a photo and reports it to `delegate`, which is held weakly: if nothing else
  /// keeps it alive until then, nobody is told.
  public func capturePhoto(delegate: PhotoCaptureDelegate) {
    lock.lock()
    captures += 1
    let outcome = outcomes.count > 1 ? outcomes.removeFirst() : outcomes[0]
    lock.unlock()

    let photo: CapturedPhoto
    let error: CameraError?
    switch outcome {
    case .photo(let image): (photo, error) = (CapturedPhoto(fileData: image.fileData), nil)
    case .failure(let failure): (photo, error) = (CapturedPhoto(fileData: nil), failure)
    case .noData: (photo, error) = (CapturedPhoto(fileData: nil), nil)
    case .corruptData: (photo, error) = (CapturedPhoto(fileData: Self.corruptFile), nil)
    case .corruptDataAndError(let failure):
      (photo, error) = (CapturedPhoto(fileData: Self.corruptFile), failure)
    case .photoAndError(let image, let failure):
      (photo, error) = (CapturedPhoto(fileData: image.fileData), failure)
    }
    script.deliver { [weak delegate] in
      delegate?.photoOutput(self, didFinishProcessingPhoto: photo, error: error)
      self.lock.lock()
      self.reports += 1
      if delegate == nil { self.reportsToNobody += 1 }
      self.lock.unlock()
    }
  }
}
