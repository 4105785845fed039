// Chapter 5, "Cancellation is a request": passing a task's cancellation on to legacy work.
import Foundation
import Synchronization

struct DownloadCancelled: Error {}

/// A made-up legacy download: it reports once; after cancel() it reports DownloadCancelled.
final class LegacyDownload: @unchecked Sendable {
  private let handler = Mutex<(@Sendable (Result<Data, any Error>) -> Void)?>(nil)

  func start(completion: @escaping @Sendable (Result<Data, any Error>) -> Void) {
    handler.withLock { $0 = completion }
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { [self] in
      handler.withLock { $0.take() }?(.success(Data("done".utf8)))
    }
  }

  func cancel() {
    handler.withLock { $0.take() }?(.failure(DownloadCancelled()))
  }
}

func contents(of download: LegacyDownload) async throws -> Data {
  // listing: handler
  try await withTaskCancellationHandler {
    try await withCheckedThrowingContinuation { continuation in
      download.start { result in continuation.resume(with: result) }
    }
  } onCancel: {
    download.cancel()  // the legacy way to stop; it reports .cancelled through the handler
  }
  // listing: end
}
